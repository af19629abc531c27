#include "testutil.h"
void suite_smpp_proto(void);
void suite_smpp_proto(void) { }
