int tp_io_placeholder(void); int tp_io_placeholder(void){return 0;}
