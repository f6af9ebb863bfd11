/* pb.c - protobuf-c message building helpers (see pb.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "csi/pb.h"

void *objfs_pb_new(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	if (m != NULL)
		protobuf_c_message_init(d, m);
	return m;
}

int objfs_pb_set_str(char **field, const char *s)
{
	char *copy = strdup(s != NULL ? s : "");

	if (copy == NULL)
		return ENOMEM;
	if (*field != NULL && *field != protobuf_c_empty_string)
		free(*field);
	*field = copy;
	return 0;
}

int objfs_pb_append(void ***array, size_t *n, void *item)
{
	void **grown = realloc(*array, (*n + 1) * sizeof(**array));

	if (grown == NULL)
		return ENOMEM;
	grown[*n] = item;
	*array = grown;
	(*n)++;
	return 0;
}

const char *objfs_pb_map_get(void *const *entries, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct objfs_pb_map_entry *e = entries[i];

		if (e->key != NULL && strcmp(e->key, key) == 0)
			return e->value;
	}
	return NULL;
}

int objfs_pb_map_add(void ***entries, size_t *n,
		     const ProtobufCMessageDescriptor *d,
		     const char *key, const char *value)
{
	struct objfs_pb_map_entry *e = objfs_pb_new(d);
	int err;

	if (e == NULL)
		return ENOMEM;
	err = objfs_pb_set_str(&e->key, key);
	if (err == 0)
		err = objfs_pb_set_str(&e->value, value);
	if (err == 0)
		err = objfs_pb_append(entries, n, e);
	if (err != 0)
		protobuf_c_message_free_unpacked(&e->base, NULL);
	return err;
}
