/*
 * driver.c - driver lifetime and the routing table (see driver.h).
 *
 * The table is built once, at create time, from the five CSI service
 * descriptors that protoc-c generates, so no CSI method can be missing from
 * it.  Handlers are attached by path from `handlers` below, filtered by the
 * mode: a controller-mode plugin does not answer Node calls and vice versa.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "csi.pb-c.h"
#include "csi/controller.h"
#include "csi/driver.h"
#include "csi/node.h"

enum service_kind {
	SVC_IDENTITY,      /* every mode */
	SVC_CONTROLLER,    /* controller and all */
	SVC_NODE,          /* node and all */
};

struct handler_row {
	const char *path;
	objfs_rpc_handler fn;
};

static const struct handler_row handlers[] = {
	{ "/csi.v1.Identity/GetPluginInfo", objfs_csi_get_plugin_info },
	{ "/csi.v1.Identity/GetPluginCapabilities", objfs_csi_get_plugin_capabilities },
	{ "/csi.v1.Identity/Probe", objfs_csi_probe },
	/* -- controller (controller.c) -- */
	{ "/csi.v1.Controller/CreateVolume", objfs_csi_create_volume },
	{ "/csi.v1.Controller/DeleteVolume", objfs_csi_delete_volume },
	{ "/csi.v1.Controller/ValidateVolumeCapabilities", objfs_csi_validate_volume_capabilities },
	{ "/csi.v1.Controller/ListVolumes", objfs_csi_list_volumes },
	{ "/csi.v1.Controller/ControllerGetVolume", objfs_csi_controller_get_volume },
	{ "/csi.v1.Controller/GetCapacity", objfs_csi_get_capacity },
	{ "/csi.v1.Controller/ControllerGetCapabilities", objfs_csi_controller_get_capabilities },
	{ "/csi.v1.Controller/ControllerExpandVolume", objfs_csi_controller_expand_volume },
	{ "/csi.v1.Controller/CreateSnapshot", objfs_csi_create_snapshot },
	{ "/csi.v1.Controller/DeleteSnapshot", objfs_csi_delete_snapshot },
	{ "/csi.v1.Controller/ListSnapshots", objfs_csi_list_snapshots },
	{ "/csi.v1.Controller/GetSnapshot", objfs_csi_get_snapshot },
	/* -- node (node.c) -- */
	{ "/csi.v1.Node/NodeStageVolume", objfs_csi_node_stage_volume },
	{ "/csi.v1.Node/NodeUnstageVolume", objfs_csi_node_unstage_volume },
	{ "/csi.v1.Node/NodePublishVolume", objfs_csi_node_publish_volume },
	{ "/csi.v1.Node/NodeUnpublishVolume", objfs_csi_node_unpublish_volume },
	{ "/csi.v1.Node/NodeGetVolumeStats", objfs_csi_node_get_volume_stats },
	{ "/csi.v1.Node/NodeGetCapabilities", objfs_csi_node_get_capabilities },
	{ "/csi.v1.Node/NodeGetInfo", objfs_csi_node_get_info },
};

static const struct {
	const ProtobufCServiceDescriptor *desc;
	enum service_kind kind;
} services[] = {
	{ &csi__v1__identity__descriptor, SVC_IDENTITY },
	{ &csi__v1__controller__descriptor, SVC_CONTROLLER },
	{ &csi__v1__group_controller__descriptor, SVC_CONTROLLER },
	{ &csi__v1__snapshot_metadata__descriptor, SVC_CONTROLLER },
	{ &csi__v1__node__descriptor, SVC_NODE },
};

int objfs_csi_mode_parse(const char *s, enum objfs_csi_mode *out)
{
	if (s == NULL)
		return EINVAL;
	if (strcmp(s, "controller") == 0)
		*out = OBJFS_CSI_MODE_CONTROLLER;
	else if (strcmp(s, "node") == 0)
		*out = OBJFS_CSI_MODE_NODE;
	else if (strcmp(s, "all") == 0)
		*out = OBJFS_CSI_MODE_ALL;
	else
		return EINVAL;
	return 0;
}

static bool mode_serves(enum objfs_csi_mode mode, enum service_kind kind)
{
	switch (kind) {
	case SVC_IDENTITY:
		return true;
	case SVC_CONTROLLER:
		return (mode & OBJFS_CSI_MODE_CONTROLLER) != 0;
	case SVC_NODE:
		return (mode & OBJFS_CSI_MODE_NODE) != 0;
	}
	return false;
}

static objfs_rpc_handler find_handler(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		if (strcmp(handlers[i].path, path) == 0)
			return handlers[i].fn;
	}
	return NULL;
}

static void free_methods(struct objfs_rpc_method *methods, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free((char *)methods[i].path);
	free(methods);
}

static int build_table(struct objfs_csi *csi)
{
	size_t total = 0;
	size_t i, j, k = 0;

	for (i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		total += services[i].desc->n_methods;
	csi->methods = calloc(total, sizeof(*csi->methods));
	if (csi->methods == NULL)
		return ENOMEM;
	for (i = 0; i < sizeof(services) / sizeof(services[0]); i++) {
		const ProtobufCServiceDescriptor *d = services[i].desc;

		for (j = 0; j < d->n_methods; j++, k++) {
			size_t len = strlen(d->name) + strlen(d->methods[j].name) + 3;
			char *path = malloc(len);

			if (path == NULL) {
				free_methods(csi->methods, k);
				csi->methods = NULL;
				return ENOMEM;
			}
			snprintf(path, len, "/%s/%s", d->name, d->methods[j].name);
			csi->methods[k].path = path;
			csi->methods[k].req = d->methods[j].input;
			csi->methods[k].resp = d->methods[j].output;
			csi->methods[k].fn = mode_serves(csi->cfg.mode, services[i].kind) ?
					     find_handler(path) : NULL;
		}
	}
	csi->n_methods = total;
	return 0;
}

int objfs_csi_create(const struct objfs_csi_config *cfg,
		     struct objfs_store *store, struct objfs_log *log,
		     struct objfs_csi **out)
{
	struct objfs_csi *csi;
	int err;

	*out = NULL;
	csi = calloc(1, sizeof(*csi));
	if (csi == NULL) {
		objfs_store_destroy(store);
		return ENOMEM;
	}
	csi->cfg = *cfg;
	if (csi->cfg.driver_name == NULL)
		csi->cfg.driver_name = OBJFS_CSI_DRIVER_NAME;
	if (csi->cfg.version == NULL)
		csi->cfg.version = PACKAGE_VERSION;
	csi->log = log;
	csi->store = store;
	err = build_table(csi);
	if (err == 0)
		err = objfs_csi_metrics_create(csi);
	if (err != 0)
		goto fail;
	/* -- controller state: create here when the mode serves it -- */
	if ((csi->cfg.mode & OBJFS_CSI_MODE_CONTROLLER) != 0) {
		err = objfs_csi_controller_create(csi, &csi->controller);
		if (err != 0)
			goto fail;
	}
	/* -- node state: create here when the mode serves it -- */
	if (mode_serves(csi->cfg.mode, SVC_NODE)) {
		err = objfs_csi_node_create(csi, cfg->mounter, &csi->node);
		if (err != 0)
			goto fail;
	}
	*out = csi;
	return 0;
fail:
	objfs_csi_destroy(csi);
	return err;
}

void objfs_csi_destroy(struct objfs_csi *csi)
{
	if (csi == NULL)
		return;
	/* -- node state: destroy here -- */
	objfs_csi_node_destroy(csi->node);
	/* -- controller state: destroy here -- */
	objfs_csi_controller_destroy(csi->controller);
	objfs_csi_metrics_destroy(csi);
	free_methods(csi->methods, csi->n_methods);
	objfs_store_destroy(csi->store);
	free(csi);
}

bool objfs_csi_serves(const struct objfs_csi *csi, const char *path)
{
	return objfs_rpc_serves(csi->methods, csi->n_methods, path);
}
