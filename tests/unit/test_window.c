#include "testutil.h"
void suite_window(void);
void suite_window(void) { }
