/*
 * pb.h - building protobuf-c responses that protobuf_c_message_free_unpacked
 * (NULL allocator) can free: every part malloc'ed.
 */
#ifndef OBJFS_CSI_PB_H
#define OBJFS_CSI_PB_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * The strings of a request, checked on the wire before any handler sees
 * it (rpc.c's dispatcher): protobuf-c hands strings over as C strings, so
 * a NUL inside one would cut it short and the handler act on another name.
 * Every string field, at any depth, in repeated fields and in the keys and
 * values of maps, must be valid UTF-8 of at most OBJFS_PB_STRING_MAX bytes
 * with no NUL and no control character (0x00-0x1f, 0x7f).  The values of
 * a map named *secrets* may be up to OBJFS_PB_SECRET_MAX bytes and hold
 * tabs and line breaks (a PEM CA bundle).  The CSI spec's own limit is
 * 128 bytes for most strings, but paths may be as long as the system's
 * (PATH_MAX); handlers check the tighter limits of their fields.
 *
 * buf holds len bytes of a packed message of type d.  0, or EINVAL with
 * why set to the field's path and the fault, e.g. `volume_capabilities[0]
 * .mount.mount_flags[1] holds a NUL byte` or `parameters["bucket"] holds a
 * control character` (a value is never quoted: it may be a secret).
 */
#define OBJFS_PB_STRING_MAX 4096
#define OBJFS_PB_SECRET_MAX 65536
#define OBJFS_PB_STR_(x) #x
#define OBJFS_PB_STR(x) OBJFS_PB_STR_(x)
int objfs_pb_check_strings(const ProtobufCMessageDescriptor *d,
			   const uint8_t *buf, size_t len,
			   char *why, size_t why_cap);

#endif
