/*
 * caps.h - the volume capabilities objfs offers, one rule for the
 * Controller (CreateVolume, ValidateVolumeCapabilities, GetCapacity,
 * ControllerExpandVolume) and the Node (NodeStageVolume,
 * NodePublishVolume).
 *
 * objfs offers every access mode CSI knows, as a mount (never block) of
 * fs_type "objfs", "fuse", "fuse.objfs" or none.  A capability is:
 *   well-formed and offered          OK
 *   malformed (missing access_mode, an unknown mode, no access_type)
 *                                    INVALID_ARGUMENT
 *   well-formed, not offered (block access, another fs_type)
 *                                    FAILED_PRECONDITION
 * The Node checks more of a mount (volume_mount_group, mount_flags) in
 * node.c; those rules are objfs-mount's, not the capability's.
 *
 * Stateless; messages are written to the caller's buffer and never hold
 * more than the first 64 bytes of a request string.
 */
#ifndef OBJFS_CSI_CAPS_H
#define OBJFS_CSI_CAPS_H

#include <stdbool.h>
#include <stddef.h>

#include "csi.pb-c.h"
#include "csi/rpc.h"

/* Checks one capability; field names it in msg ("volume_capability",
 * "volume_capabilities[]").  Returns OK or the code of the table above
 * with msg (len bytes) saying why. */
enum objfs_rpc_code objfs_csi_cap_check(const Csi__V1__VolumeCapability *cap,
					const char *field, char *msg, size_t len);
/* Checks caps[0..n): OK or the first problem, as objfs_csi_cap_check(). */
enum objfs_rpc_code objfs_csi_caps_check(Csi__V1__VolumeCapability *const *caps,
					 size_t n, const char *field,
					 char *msg, size_t len);

/* Modes that only read. */
bool objfs_csi_mode_reader_only(int mode);
/* Modes that allow one publication per node only (CSI's second table). */
bool objfs_csi_mode_single_target(int mode);

#endif
