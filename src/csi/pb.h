/*
 * pb.h - building protobuf-c responses that protobuf_c_message_free_unpacked
 * (NULL allocator) can free: every part malloc'ed.
 */
#ifndef OBJFS_CSI_PB_H
#define OBJFS_CSI_PB_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* A new, initialised message of type d (malloc'ed), or NULL. */
void *objfs_pb_new(const ProtobufCMessageDescriptor *d);

/* Sets *field (a string field, currently the default or malloc'ed) to a
 * malloc'ed copy of s, freeing a previous malloc'ed value.  0 or ENOMEM. */
int objfs_pb_set_str(char **field, const char *s);

/* Appends item to a repeated field (array of n pointers, realloc'ed).
 * 0 or ENOMEM (item is then not owned by the array). */
int objfs_pb_append(void ***array, size_t *n, void *item);

/* Finds key in a map<string,string> field given as an array of n entries
 * whose first two members after the base are key and value; returns the
 * value or NULL. */
struct objfs_pb_map_entry {
	ProtobufCMessage base;
	char *key;
	char *value;
};
const char *objfs_pb_map_get(void *const *entries, size_t n, const char *key);

/* Appends key=value to a map<string,string> field of entry type d. */
int objfs_pb_map_add(void ***entries, size_t *n,
		     const ProtobufCMessageDescriptor *d,
		     const char *key, const char *value);

#endif
