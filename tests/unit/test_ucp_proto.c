#include "testutil.h"
void suite_ucp_proto(void);
void suite_ucp_proto(void) { }
