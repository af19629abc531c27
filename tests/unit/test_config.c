#include "testutil.h"
void suite_config(void);
void suite_config(void) { }
