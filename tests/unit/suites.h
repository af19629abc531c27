/* suites.h - the one registry of unit test suites.
 * Each SUITE(name) needs a `void suite_<name>(void)` that adds a CUnit suite;
 * ctest runs each suite as its own test (tests/CMakeLists.txt). */
SUITE(hexutil)
SUITE(charset)
SUITE(sms_text)
SUITE(ucp)
SUITE(smpp)
SUITE(smpp_receipt)
SUITE(runtime)
SUITE(msg)
SUITE(evloop)
SUITE(window)
SUITE(session)
SUITE(smpp_proto)
SUITE(ucp_proto)
SUITE(config)
SUITE(dlr)
SUITE(log)
