#include "testutil.h"
void suite_dlr(void);
void suite_dlr(void) { }
