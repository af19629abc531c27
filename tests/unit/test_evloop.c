#include "testutil.h"
void suite_evloop(void);
void suite_evloop(void) { }
