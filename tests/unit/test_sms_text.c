#include "testutil.h"
void suite_sms_text(void);
void suite_sms_text(void) { }
