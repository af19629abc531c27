#include "testutil.h"
void suite_ucp_trn(void);
void suite_ucp_trn(void) { }
