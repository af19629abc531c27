/* journal.h - the journal room: the segment files that make an acked
 * message survive any crash (spool.h) and the records written into them
 * (spool_record.h). It knows no connector, account or thread of the
 * gateway: what each record means at start-up is for its writers.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_JOURNAL_H
#define EMG_JOURNAL_H

#include "spool.h"
#include "spool_record.h"

#endif
