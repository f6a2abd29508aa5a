/* The library's version (include/tensorplan/version.h). */
#include "tensorplan/version.h"

const char *tp_version(void) { return TP_VERSION_STRING; }
