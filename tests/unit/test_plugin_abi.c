/* test_plugin_abi - a plugin built for an ABI version emgd does not speak,
 * which the plugin host must refuse before it calls anything.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stddef.h>
#include "plugin.h"

static int never_init(const struct emg_plugin_setting *settings, size_t n, void **state, char *err,
                      size_t errlen)
{
  /* Reached only if the host ignored the version: the test then sees an init error. */
  return -1;
}

EMG_PLUGIN_EXPORT const struct emg_plugin emg_plugin = {
  .abi_version = EMG_PLUGIN_ABI_VERSION + 1,
  .init = never_init,
};
