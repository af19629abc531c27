#include "testutil.h"
void suite_msg(void);
void suite_msg(void) { }
