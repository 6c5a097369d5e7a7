/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "shm-abi.h"

/* The counters, for the other steps of a commit to add to. */
SmbStats *smb_reassembler_counters(SmbReassembler *reassembler);
