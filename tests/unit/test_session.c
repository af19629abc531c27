#include "testutil.h"
void suite_session(void);
void suite_session(void) { }
