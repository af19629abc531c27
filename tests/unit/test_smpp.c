#include "testutil.h"
void suite_smpp(void);
void suite_smpp(void) { }
