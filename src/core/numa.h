/*
 * NUMA topology and page placement through the kernel's own interfaces: sysfs for which nodes
 * exist and which CPUs each holds, the mbind system call for placement. No libnuma: its bitmask
 * allocator prints "Out of memory allocating bitmask" and calls exit(1) when malloc fails (also in
 * its load-time constructor), and the library must never exit. Nothing here allocates; every
 * mask is a fixed-size bitmask owned by the caller. Private to libuform.
 */
#ifndef UFORM_CORE_NUMA_H
#define UFORM_CORE_NUMA_H

#include <sched.h>
#include <stddef.h>

/* Nodes are numbered below this (the width of the masks arenas and executors keep). */
#define UFORM__NUMA_MAX_NODES 64

/* The highest node number online, from /sys/devices/system/node/online; 0 on a kernel or
 * container without NUMA information (one node, 0, holding everything). */
int uform__numa_max_node(void);

/* Non-zero when node `node` is online. Node 0 always is. */
int uform__numa_node_online(size_t node);

/* Adds the CPUs of `node` (its sysfs cpulist) to `cpus`. Answers 0, or -1 when the list cannot be
 * read (on a machine without NUMA information node 0 holds every CPU: that is not an error). */
int uform__numa_node_cpus(size_t node, cpu_set_t *cpus);

/* Asks the kernel to place `bytes` of pages at `pages` on the nodes of `node_mask` (preferring
 * them; binding strictly on kernels before 5.15, which lack MPOL_PREFERRED_MANY). Advice only:
 * failure is ignored, the pages then come from wherever they fault. */
void uform__numa_place(void *pages, size_t bytes, unsigned long node_mask);

#endif
