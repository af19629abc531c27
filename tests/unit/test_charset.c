#include "testutil.h"
void suite_charset(void);
void suite_charset(void) { }
