/*
 * list.h - an intrusive doubly linked list.
 *
 * A list is a head node; each element embeds a node (struct objfs_list)
 * and is reached from it with objfs_list_entry().  The list is circular
 * through its head, so adding and removing have no first/last special
 * case, and a removed node points at itself (objfs_list_linked() tells).
 * The list owns nothing: the caller allocates and frees the elements and
 * does the locking.  Every function is O(1).
 */
#ifndef OBJFS_COMMON_LIST_H
#define OBJFS_COMMON_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct objfs_list {
	struct objfs_list *prev, *next;
};

/* The element of type type whose member member is node ptr. */
#define objfs_list_entry(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Each node of head in order (pos: struct objfs_list *); _safe allows
 * removing pos (tmp: the next one). */
#define objfs_list_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define objfs_list_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

/* An empty list, or a node not in one. */
static inline void objfs_list_init(struct objfs_list *n)
{
	n->prev = n->next = n;
}

static inline bool objfs_list_empty(const struct objfs_list *head)
{
	return head->next == head;
}

/* Whether node n (initialised) is in a list. */
static inline bool objfs_list_linked(const struct objfs_list *n)
{
	return n->next != n;
}

/* Inserts n after pos (the head: at the front). */
static inline void objfs_list_insert_after(struct objfs_list *pos,
					   struct objfs_list *n)
{
	n->prev = pos;
	n->next = pos->next;
	pos->next->prev = n;
	pos->next = n;
}

static inline void objfs_list_push_front(struct objfs_list *head,
					 struct objfs_list *n)
{
	objfs_list_insert_after(head, n);
}

static inline void objfs_list_push_back(struct objfs_list *head,
					struct objfs_list *n)
{
	objfs_list_insert_after(head->prev, n);
}

/* Unlinks n from its list (a node in none: nothing); n is left alone. */
static inline void objfs_list_remove(struct objfs_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	objfs_list_init(n);
}

/* The first / last node, or NULL when the list is empty. */
static inline struct objfs_list *objfs_list_first(const struct objfs_list *head)
{
	return head->next != head ? head->next : NULL;
}

static inline struct objfs_list *objfs_list_last(const struct objfs_list *head)
{
	return head->prev != head ? head->prev : NULL;
}

#endif
