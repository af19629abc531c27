#include "testutil.h"
void suite_smpp_receipt(void);
void suite_smpp_receipt(void) { }
