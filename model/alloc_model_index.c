/* alloc_model_index.c — an intrusive treap with parent links and subtree maxima (see
 * alloc_model_index.h).
 *
 * Owned by the caching-allocator model. A treap because it is the smallest balanced tree that
 * is easy to get right: inserts rotate a node up while its priority beats its parent's,
 * removals rotate it down until it has one child and splice it out. Parent links make both
 * local, which matters because the model removes about as often as it searches (every merge
 * and every split takes nodes out of the free index). Priorities are a hash of the node's
 * address, so a node needs no field for it and stays 64 bytes. */
#include "alloc_model_index.h"

#include "gmt_hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* a < b, without branches: tree descents are unpredictable, so they compare with flags. */
static inline bool key_less(const uint64_t a[3], const uint64_t b[3]) {
    return (a[0] < b[0]) | ((a[0] == b[0]) & ((a[1] < b[1]) | ((a[1] == b[1]) & (a[2] < b[2]))));
}

static inline int key_compare(const uint64_t a[3], const uint64_t b[3]) {
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    if (a[1] != b[1])
        return a[1] < b[1] ? -1 : 1;
    if (a[2] != b[2])
        return a[2] < b[2] ? -1 : 1;
    return 0;
}

/* The heap priority: a hash of the node's address. */
static inline uint64_t priority(const ami_node *node) {
    return gmt_hash_mix64((uint64_t)(uintptr_t)node);
}

/* Descents are chains of dependent loads: start loading the next level before it is chosen. */
static inline void prefetch_children(const ami_node *node) {
#if defined(__GNUC__) || defined(__clang__)
    if (node) {
        __builtin_prefetch(node->child[0]);
        __builtin_prefetch(node->child[1]);
    }
#else
    (void)node;
#endif
}

static inline void refresh_max(ami_node *node) {
    uint64_t max = node->value;
    if (node->child[0] && node->child[0]->max_value > max)
        max = node->child[0]->max_value;
    if (node->child[1] && node->child[1]->max_value > max)
        max = node->child[1]->max_value;
    node->max_value = max;
}

/* Makes `replacement` take `old`'s place under `parent` (NULL: the root). */
static void replace_child(ami_tree *tree, ami_node *parent, ami_node *old, ami_node *replacement) {
    if (!parent)
        tree->root = replacement;
    else if (parent->child[0] == old)
        parent->child[0] = replacement;
    else
        parent->child[1] = replacement;
    if (replacement)
        replacement->parent = parent;
}

/* Rotates `node` above its parent. Only their two maxima can change. */
static void rotate_up(ami_tree *tree, ami_node *node) {
    ami_node *parent = node->parent;
    ami_node *grandparent = parent->parent;
    int side = parent->child[1] == node; /* node is parent->child[side] */
    parent->child[side] = node->child[!side];
    if (node->child[!side])
        node->child[!side]->parent = parent;
    node->child[!side] = parent;
    parent->parent = node;
    replace_child(tree, grandparent, parent, node);
    if (tree->has_values) {
        node->max_value = parent->max_value; /* it now roots the same set of nodes */
        refresh_max(parent);
    }
}

static void bubble_up(ami_tree *tree, ami_node *node) {
    while (node->parent && priority(node->parent) < priority(node))
        rotate_up(tree, node);
}

void ami_insert(ami_tree *tree, ami_node *node) {
    node->child[0] = node->child[1] = NULL;
    node->max_value = node->value;
    ami_node *parent = NULL;
    ami_node **link = &tree->root;
    while (*link) {
        parent = *link;
        if (parent->max_value < node->value)
            parent->max_value = node->value; /* the node will be below it */
        link = &parent->child[!key_less(node->key, parent->key)];
        prefetch_children(*link);
    }
    *link = node;
    node->parent = parent;
    bubble_up(tree, node);
    tree->count++;
}

/* Hangs `node` as the in-order neighbour of `neighbour` on `side` (1: after, 0: before). */
static void insert_beside(ami_tree *tree, ami_node *neighbour, ami_node *node, int side) {
    node->child[0] = node->child[1] = NULL;
    node->max_value = node->value;
    ami_node *parent = neighbour;
    if (!neighbour->child[side]) {
        neighbour->child[side] = node;
    } else {
        parent = neighbour->child[side];
        while (parent->child[!side])
            parent = parent->child[!side];
        parent->child[!side] = node;
    }
    node->parent = parent;
    for (ami_node *above = parent; above && above->max_value < node->value; above = above->parent)
        above->max_value = node->value;
    bubble_up(tree, node);
    tree->count++;
}

void ami_insert_after(ami_tree *tree, ami_node *neighbour, ami_node *node) {
    insert_beside(tree, neighbour, node, 1);
}

void ami_insert_before(ami_tree *tree, ami_node *neighbour, ami_node *node) {
    insert_beside(tree, neighbour, node, 0);
}

/* The in-order neighbour of `node` on `side` (1: next, 0: previous). */
static ami_node *beside(const ami_node *node, int side) {
    if (node->child[side]) {
        node = node->child[side];
        while (node->child[!side])
            node = node->child[!side];
        return (ami_node *)node;
    }
    while (node->parent && node->parent->child[side] == node)
        node = node->parent;
    return node->parent;
}

ami_node *ami_next(const ami_node *node) { return beside(node, 1); }

void ami_remove(ami_tree *tree, ami_node *node) {
    ami_node *original_parent = node->parent;
    while (node->child[0] && node->child[1]) {
        rotate_up(tree, node->child[priority(node->child[1]) > priority(node->child[0])]);
    }
    ami_node *parent = node->parent;
    replace_child(tree, parent, node, node->child[0] ? node->child[0] : node->child[1]);
    /* the nodes rotated above `node` changed for sure; above them, stop once nothing does */
    ami_node *above = tree->has_values ? parent : NULL;
    for (; above && above != original_parent; above = above->parent)
        refresh_max(above);
    for (; above; above = above->parent) {
        uint64_t old_max = above->max_value;
        refresh_max(above);
        if (above->max_value == old_max)
            break;
    }
    node->child[0] = node->child[1] = node->parent = NULL;
    tree->count--;
}

void ami_update(ami_tree *tree, ami_node *node, uint64_t k0, uint64_t k1, uint64_t k2,
                uint64_t value) {
    const uint64_t key[3] = {k0, k1, k2};
    /* a key that moves down can only pass the previous node, one that moves up the next */
    bool moves_down = key_less(key, node->key);
    const ami_node *neighbour = beside(node, !moves_down);
    bool in_place =
        !neighbour || (moves_down ? key_less(neighbour->key, key) : key_less(key, neighbour->key));
    if (!in_place)
        ami_remove(tree, node);
    node->key[0] = k0;
    node->key[1] = k1;
    node->key[2] = k2;
    if (in_place) {
        ami_set_value(tree, node, value);
    } else {
        node->value = value;
        ami_insert(tree, node);
    }
}

ami_node *ami_search(const ami_tree *tree, ami_match match, uint64_t k0, uint64_t k1, uint64_t k2) {
    const uint64_t key[3] = {k0, k1, k2};
    ami_node *best = NULL;
    ami_node *node = tree->root;
    bool below = match == AMI_LT || match == AMI_LE;
    while (node) {
        bool candidate; /* node is on the asked side of the key */
        switch (match) {
        case AMI_LT:
            candidate = key_less(node->key, key);
            break;
        case AMI_LE:
            candidate = !key_less(key, node->key);
            break;
        case AMI_GE:
            candidate = !key_less(node->key, key);
            break;
        default:
            candidate = key_less(key, node->key);
            break;
        }
        best = candidate ? node : best;
        node = node->child[candidate == below]; /* a candidate: look nearer the key */
        prefetch_children(node);
    }
    return best;
}

void ami_set_value(ami_tree *tree, ami_node *node, uint64_t value) {
    (void)tree;
    node->value = value;
    for (ami_node *above = node; above; above = above->parent) {
        uint64_t old_max = above->max_value;
        refresh_max(above);
        if (above->max_value == old_max)
            break;
    }
}

ami_node *ami_first_with_value(const ami_tree *tree, uint64_t at_least) {
    ami_node *node = tree->root;
    if (!node || node->max_value < at_least)
        return NULL;
    while (node) {
        if (node->child[0] && node->child[0]->max_value >= at_least)
            node = node->child[0];
        else if (node->value >= at_least)
            return node;
        else
            node = node->child[1];
    }
    return NULL;
}

uint64_t ami_max_value(const ami_tree *tree) { return tree->root ? tree->root->max_value : 0; }

/* Walks in order; *previous is the last node seen. Returns the subtree size or -1. */
static int64_t validate_below(const ami_node *node, const ami_node **previous) {
    if (!node)
        return 0;
    int64_t left = validate_below(node->child[0], previous);
    if (left < 0)
        return -1;
    if (*previous && key_compare((*previous)->key, node->key) >= 0)
        return -1;
    *previous = node;
    int64_t right = validate_below(node->child[1], previous);
    if (right < 0)
        return -1;
    uint64_t max = node->value;
    const ami_node *children[2] = {node->child[0], node->child[1]};
    for (int i = 0; i < 2; i++) {
        if (!children[i])
            continue;
        if (priority(children[i]) > priority(node) || children[i]->parent != node)
            return -1;
        if (children[i]->max_value > max)
            max = children[i]->max_value;
    }
    if (max != node->max_value)
        return -1;
    return left + right + 1;
}

int ami_validate(const ami_tree *tree) {
    const ami_node *previous = NULL;
    if (tree->root && tree->root->parent)
        return -1;
    int64_t count = validate_below(tree->root, &previous);
    return count >= 0 && (uint64_t)count == tree->count ? 0 : -1;
}
