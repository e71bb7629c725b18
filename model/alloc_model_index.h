/* alloc_model_index.h — the ordered index under the caching-allocator model's layout
 * (alloc_model_layout.c).
 *
 * Internal to the model: not a public API. An intrusive treap: the caller embeds an ami_node in
 * its own struct (a block can sit in two trees at once through two embedded nodes), so the
 * index allocates nothing and never fails. Keys are three uint64 compared lexicographically
 * (unused parts are 0), which covers every order the model needs: blocks and segments by
 * address, free blocks by PyTorch's (stream, size, address).
 *
 * Each node also carries a `value`, and every subtree knows the largest value in it
 * (`max_value`). The model uses it twice: free blocks carry their size (largest free block in
 * O(1)) and segments carry the usable address gap before them (first-fit placement of a new
 * segment in O(log n)).
 *
 * Nodes know their parent, so removing a node, inserting one next to a known neighbour and
 * changing a value need no search from the root: they cost O(1) expected rotations plus a
 * walk up that stops as soon as a subtree maximum is unchanged. Searches and plain inserts
 * are O(log n) expected.
 *
 * A node's heap priority is a hash of its address: nothing to store, independent of the keys,
 * and it never changes while the node is in a tree. The shapes may differ between runs; what
 * the trees answer never does.
 *
 * Keys must be unique within a tree. A caller may change a node's key in place when the change
 * keeps the node between its neighbours (e.g. a block growing downwards into a range nobody
 * else holds); any other key change goes through ami_update. */
#ifndef GMT_ALLOC_MODEL_INDEX_H
#define GMT_ALLOC_MODEL_INDEX_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ami_node {
    struct ami_node *child[2]; /* [0] smaller keys, [1] larger keys */
    struct ami_node *parent;
    uint64_t key[3];
    uint64_t value;     /* the node's own value */
    uint64_t max_value; /* largest value in the subtree rooted here */
} ami_node;             /* 64 bytes: one cache line when the caller aligns it */

typedef struct ami_tree {
    ami_node *root;
    uint64_t count;
    bool has_values; /* false: every value is 0 and maxima are not kept (saves the upkeep) */
} ami_tree;

/* How a search compares the stored keys with the one asked for. */
typedef enum ami_match {
    AMI_LT, /* the largest key < the one given */
    AMI_LE, /* the largest key <= the one given */
    AMI_GE, /* the smallest key >= the one given */
    AMI_GT  /* the smallest key > the one given */
} ami_match;

/* Inserts `node` (key and value set by the caller; the key not yet in the tree). */
void ami_insert(ami_tree *tree, ami_node *node);

/* Inserts `node` right after `neighbour` (in `tree`): no key may lie between the two. */
void ami_insert_after(ami_tree *tree, ami_node *neighbour, ami_node *node);

/* The same, right before `neighbour`. */
void ami_insert_before(ami_tree *tree, ami_node *neighbour, ami_node *node);

/* Gives `node` (in `tree`) a new key and value: in place when the key still sorts between the
 * node's neighbours (the common case for a block that grows or shrinks a little), else by
 * removing and inserting it. */
void ami_update(ami_tree *tree, ami_node *node, uint64_t k0, uint64_t k1, uint64_t k2,
                uint64_t value);

/* Removes `node`, which must be in `tree`. */
void ami_remove(ami_tree *tree, ami_node *node);

/* The in-order successor of `node`, or NULL. O(1) expected. */
ami_node *ami_next(const ami_node *node);

/* The node nearest to the key by `match`, or NULL. */
ami_node *ami_search(const ami_tree *tree, ami_match match, uint64_t k0, uint64_t k1, uint64_t k2);

/* Sets the value of `node` (in `tree`) and refreshes the subtree maxima above it. */
void ami_set_value(ami_tree *tree, ami_node *node, uint64_t value);

/* The node with the smallest key whose value is >= `at_least`, or NULL. */
ami_node *ami_first_with_value(const ami_tree *tree, uint64_t at_least);

/* The largest value in the tree; 0 when empty. */
uint64_t ami_max_value(const ami_tree *tree);

/* Checks order, heap property, parents, maxima and count; 0 when sound, -1 otherwise. O(n). */
int ami_validate(const ami_tree *tree);

#endif
