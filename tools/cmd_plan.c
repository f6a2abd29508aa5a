#include "cli.h"
int tp_cmd_plan(int argc, char **argv){(void)argc;(void)argv;return 1;}
void tp_help_plan(FILE*o){(void)o;}
