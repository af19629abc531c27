#include "testutil.h"
void suite_log(void);
void suite_log(void) { }
