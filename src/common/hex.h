/*
 * hex.h - the value of one hexadecimal digit, the one decoder of the
 * escapes objfs reads (the local store's names, records, attribute index
 * segments, S3 XML's URL-encoded keys).  Header only: nothing to link.
 */
#ifndef OBJFS_COMMON_HEX_H
#define OBJFS_COMMON_HEX_H

/* 0..15 for [0-9a-fA-F], else -1. */
static inline int objfs_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
