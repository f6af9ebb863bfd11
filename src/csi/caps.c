/* caps.c - the volume capabilities objfs offers (see caps.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "csi/caps.h"

static bool fs_type_ok(const char *t)
{
	return t == NULL || t[0] == '\0' || strcmp(t, "objfs") == 0 ||
	       strcmp(t, "fuse") == 0 || strcmp(t, "fuse.objfs") == 0;
}

static bool mode_known(int mode)
{
	switch (mode) {
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER:
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY:
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY:
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_SINGLE_WRITER:
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER:
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_SINGLE_WRITER:
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER:
		return true;
	default:
		return false;
	}
}

enum objfs_rpc_code objfs_csi_cap_check(const Csi__V1__VolumeCapability *cap,
					const char *field, char *msg, size_t len)
{
	if (cap == NULL) {
		snprintf(msg, len, "%s is missing", field);
		return OBJFS_RPC_INVALID_ARGUMENT;
	}
	if (cap->access_mode == NULL ||
	    cap->access_mode->mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__UNKNOWN) {
		snprintf(msg, len, "%s.access_mode is required", field);
		return OBJFS_RPC_INVALID_ARGUMENT;
	}
	if (!mode_known((int)cap->access_mode->mode)) {
		snprintf(msg, len, "%s.access_mode.mode %d is not a known access mode",
			 field, (int)cap->access_mode->mode);
		return OBJFS_RPC_INVALID_ARGUMENT;
	}
	switch (cap->access_type_case) {
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT:
		if (cap->mount == NULL)
			break;
		if (!fs_type_ok(cap->mount->fs_type)) {
			snprintf(msg, len, "fs_type \"%.64s\" is not offered: objfs volumes are objfs (FUSE) filesystems",
				 cap->mount->fs_type);
			return OBJFS_RPC_FAILED_PRECONDITION;
		}
		return OBJFS_RPC_OK;
	case CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK:
		snprintf(msg, len, "block access is not supported: objfs volumes are filesystems (use a mount capability)");
		return OBJFS_RPC_FAILED_PRECONDITION;
	default:
		break;
	}
	snprintf(msg, len, "%s.access_type (mount or block) is required", field);
	return OBJFS_RPC_INVALID_ARGUMENT;
}

enum objfs_rpc_code objfs_csi_caps_check(Csi__V1__VolumeCapability *const *caps,
					 size_t n, const char *field,
					 char *msg, size_t len)
{
	enum objfs_rpc_code code;
	size_t i;

	for (i = 0; i < n; i++) {
		code = objfs_csi_cap_check(caps[i], field, msg, len);
		if (code != OBJFS_RPC_OK)
			return code;
	}
	return OBJFS_RPC_OK;
}

bool objfs_csi_mode_reader_only(int mode)
{
	return mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY ||
	       mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
}

bool objfs_csi_mode_single_target(int mode)
{
	return mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER ||
	       mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY ||
	       mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_SINGLE_WRITER;
}
