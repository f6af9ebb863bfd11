/*
 * identity.c - the CSI Identity service.
 *
 * GetPluginInfo: the driver name and version.  GetPluginCapabilities: derived
 * from the routing table, so the plugin never advertises a service it does
 * not answer.  Probe: ready only when the default object store answers a
 * one-key listing.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "common/errors.h"
#include "common/log.h"
#include "csi.pb-c.h"
#include "csi/driver.h"
#include "csi/pb.h"
#include "csi/rpc.h"

/* Whether csi answers path (asked of rpc.c: driver.c routes to here). */
static bool serves(const struct objfs_csi *csi, const char *path)
{
	return objfs_rpc_serves(csi->methods, csi->n_methods, path);
}

enum objfs_rpc_code objfs_csi_get_plugin_info(void *ctx, const ProtobufCMessage *req,
					      ProtobufCMessage **resp,
					      struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	Csi__V1__GetPluginInfoResponse *r;

	r = objfs_pb_new(&csi__v1__get_plugin_info_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL ||
	    objfs_pb_set_str(&r->name, csi->cfg.driver_name) != 0 ||
	    objfs_pb_set_str(&r->vendor_version, csi->cfg.version) != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	return OBJFS_RPC_OK;
}

static int add_service_cap(Csi__V1__GetPluginCapabilitiesResponse *r,
			   Csi__V1__PluginCapability__Service__Type type)
{
	Csi__V1__PluginCapability *cap;

	cap = objfs_pb_new(&csi__v1__plugin_capability__descriptor);
	if (cap == NULL)
		return ENOMEM;
	cap->type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
	cap->service = objfs_pb_new(&csi__v1__plugin_capability__service__descriptor);
	if (cap->service == NULL ||
	    objfs_pb_append((void ***)&r->capabilities, &r->n_capabilities, cap) != 0) {
		protobuf_c_message_free_unpacked(&cap->base, NULL);
		return ENOMEM;
	}
	cap->service->type = type;
	return 0;
}

static int add_expansion_cap(Csi__V1__GetPluginCapabilitiesResponse *r,
			     Csi__V1__PluginCapability__VolumeExpansion__Type type)
{
	Csi__V1__PluginCapability *cap;

	cap = objfs_pb_new(&csi__v1__plugin_capability__descriptor);
	if (cap == NULL)
		return ENOMEM;
	cap->type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_VOLUME_EXPANSION;
	cap->volume_expansion =
		objfs_pb_new(&csi__v1__plugin_capability__volume_expansion__descriptor);
	if (cap->volume_expansion == NULL ||
	    objfs_pb_append((void ***)&r->capabilities, &r->n_capabilities, cap) != 0) {
		protobuf_c_message_free_unpacked(&cap->base, NULL);
		return ENOMEM;
	}
	cap->volume_expansion->type = type;
	return 0;
}

enum objfs_rpc_code objfs_csi_get_plugin_capabilities(void *ctx, const ProtobufCMessage *req,
						      ProtobufCMessage **resp,
						      struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	Csi__V1__GetPluginCapabilitiesResponse *r;
	int err = 0;

	r = objfs_pb_new(&csi__v1__get_plugin_capabilities_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	if (serves(csi, "/csi.v1.Controller/ControllerGetCapabilities"))
		err = add_service_cap(r, CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__CONTROLLER_SERVICE);
	/* Expansion only rewrites the volume's record; mounts pick the new
	 * capacity up while in use. */
	if (err == 0 && serves(csi, "/csi.v1.Controller/ControllerExpandVolume"))
		err = add_expansion_cap(r, CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__ONLINE);
	if (err != 0)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	return OBJFS_RPC_OK;
}

enum objfs_rpc_code objfs_csi_probe(void *ctx, const ProtobufCMessage *req,
				    ProtobufCMessage **resp,
				    struct objfs_rpc_status *st)
{
	struct objfs_csi *csi = ctx;
	struct objfs_list_req lreq = { "", NULL, NULL, NULL, 1 };
	struct objfs_list_page page = OBJFS_LIST_PAGE_INIT;
	Csi__V1__ProbeResponse *r;
	int err;

	if (csi->store == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "no object store is configured");
	err = objfs_store_list(csi->store, &lreq, &page);
	objfs_list_page_release(&page);
	if (err != 0) {
		objfs_warn(csi->log, "csi", "probe: the object store does not answer: %s",
			   objfs_strerror(err));
		return objfs_rpc_fail(st, OBJFS_RPC_FAILED_PRECONDITION,
				      "the object store does not answer: %s",
				      objfs_strerror(err));
	}
	r = objfs_pb_new(&csi__v1__probe_response__descriptor);
	*resp = (ProtobufCMessage *)r;
	if (r == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	r->ready = objfs_pb_new(&google__protobuf__bool_value__descriptor);
	if (r->ready == NULL)
		return objfs_rpc_fail(st, OBJFS_RPC_RESOURCE_EXHAUSTED, "out of memory");
	r->ready->value = 1;
	return OBJFS_RPC_OK;
}
