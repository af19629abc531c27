#include "testutil.h"
void suite_ucp(void);
void suite_ucp(void) { }
