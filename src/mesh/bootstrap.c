/*
 * uform_mesh_bootstrap, uform_mesh_describe, uform_mesh_free (uform.h, docs/mesh.md).
 *
 * The options are resolved first — with the launcher AUTO, the index, count, job and default
 * rendezvous come from the launcher's variables (launcher.c) — then, for a run of more than one
 * member, the collectives module is loaded, this member's facts are made, and the members meet in a
 * folder (rendezvous_folder.c) or at a tcp:// or redis:// store (rendezvous_store.c), both taking the
 * steps of bootstrap.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/cpu.h"
#include "exec/executor.h"
#include "mesh/bootstrap.h"
#include "mesh/store.h"

/* "2, 3 and 7" (at most 24 named). */
void uform__bootstrap_list_missing(const unsigned char *arrived, size_t count, char *text, size_t capacity) {
    size_t missing = 0, named = 0, used = 0;
    for (size_t i = 0; i < count; ++i) missing += !arrived[i];
    text[0] = 0;
    for (size_t i = 0; i < count && used < capacity; ++i) {
        if (arrived[i]) continue;
        if (named == 24) {
            snprintf(text + used, capacity - used, " and %zu more", missing - named);
            return;
        }
        const char *separator = named == 0 ? "" : (named + 1 == missing ? " and " : ", ");
        used += (size_t)snprintf(text + used, capacity - used, "%s%zu", separator, i);
        named += 1;
    }
}

uform_status_t uform__bootstrap_barrier(uform__bootstrap_t *boot, const char *where, const char *what,
                                        uform__bootstrap_look_t look, void *state) {
    unsigned char *arrived = calloc(boot->count, 1);
    if (!arrived)
        return uform__fail(boot->outcome, UFORM_OUT_OF_MEMORY, boot->function, "cannot allocate memory to track %zu members",
                           boot->count);
    arrived[boot->index] = 1;
    size_t waiting = boot->count - 1;
    double deadline = uform__seconds_now() + (double)boot->timeout_ms / 1000.0;
    uform_status_t status = UFORM_OK;
    while (status == UFORM_OK && waiting > 0) {
        status = look(state, arrived, &waiting);
        if (status != UFORM_OK || waiting == 0) break;
        if (uform__seconds_now() >= deadline) {
            char missing[256];
            uform__bootstrap_list_missing(arrived, boot->count, missing, sizeof missing);
            status = uform__fail(boot->outcome, UFORM_TIMEOUT, boot->function,
                                 "member%s %s of %zu did not arrive %s within %.3g s: start every member with the "
                                 "same %s and job within the timeout",
                                 waiting == 1 ? "" : "s", missing, boot->count, where, (double)boot->timeout_ms / 1000.0,
                                 what);
            break;
        }
        uform__bootstrap_sleep(UFORM__BOOTSTRAP_POLL_MS);
    }
    free(arrived);
    return status;
}

uform_status_t uform__bootstrap_arrived(uform__bootstrap_t *boot, const uform__facts_t *theirs, size_t index,
                                        unsigned char *arrived, size_t *waiting, const char *where,
                                        const char *advice) {
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    /* A member that counts differently may even sit beyond our count. */
    if (uform__facts_compare(&boot->mine, boot->index, theirs, index, message, sizeof message) != 0)
        return uform__fail(boot->outcome, UFORM_CONFIG_MISMATCH, boot->function, "the members of job %s disagree: %s (%s)",
                           where, message, advice);
    if (index < boot->count && !arrived[index]) arrived[index] = 1, *waiting -= 1;
    return UFORM_OK;
}

int uform__bootstrap_process_gone(const uform__facts_t *facts, const char *host) {
    const char *their_host = uform__facts_get(facts, "host"), *pid = uform__facts_get(facts, "pid");
    if (!their_host || !pid || strcmp(their_host, host) != 0) return 0;
    long number = strtol(pid, NULL, 10);
    return number > 0 && kill((pid_t)number, 0) == -1 && errno == ESRCH;
}


/* The first configured, up, non-loopback IPv4 address, else 127.0.0.1. */
static void default_address(char *address, size_t capacity) {
    snprintf(address, capacity, "127.0.0.1");
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) return;
    for (struct ifaddrs *entry = list; entry; entry = entry->ifa_next) {
        if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET) continue;
        if (!(entry->ifa_flags & IFF_UP) || (entry->ifa_flags & IFF_LOOPBACK)) continue;
        const struct sockaddr_in *ip = (const struct sockaddr_in *)entry->ifa_addr;
        if (inet_ntop(AF_INET, &ip->sin_addr, address, (socklen_t)capacity)) break;
    }
    freeifaddrs(list);
}

static int job_name_valid(const char *job) {
    size_t length = strlen(job);
    if (length == 0 || length > 128 || strcmp(job, ".") == 0 || strcmp(job, "..") == 0) return 0;
    return uform__facts_plain_name(job);
}

/* Binds a socket to `address` (port 0) and lets it go: an address this host does not have is
 * refused here, with our words, before any peer waits for us (and Gloo, which leaks its address
 * list when its own bind fails, never sees it). */
static uform_status_t check_bindable(const char *address, uform_outcome_t *outcome, const char *function) {
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM, hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    int error = getaddrinfo(address, "0", &hints, &found);
    if (error == EAI_MEMORY || (error == EAI_SYSTEM && errno == ENOMEM))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate memory to resolve options.address '%s'",
                           address);
    if (error != 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "options.address '%s': %s", address,
                           gai_strerror(error));
    int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
    int bound = fd >= 0 && bind(fd, found->ai_addr, found->ai_addrlen) == 0;
    int saved = errno;
    if (fd >= 0) close(fd);
    freeaddrinfo(found);
    if (!bound)
        return uform__fail(outcome, UFORM_IO, function,
                           "cannot bind the collectives to %s: %s (name an address of this host that the other members "
                           "reach)",
                           address, strerror(saved));
    return UFORM_OK;
}

static const char *executor_kind(uform_executor_t executor) {
    if (!executor) return "calling-thread";
    return executor->kind == uform__executor_pool ? "pool" : "threads";
}

static uform_status_t make_facts(uform__bootstrap_t *boot, uform_executor_t executor, uform_cpu_class_t cpu_class,
                                 const uform_mesh_options_t *options, const char *address,
                                 uform_mesh_launcher_t launcher) {
    uform__facts_t *facts = &boot->mine;
    int major, minor, patch;
    uform_version(&major, &minor, &patch);
    uform_status_t status = uform__facts_set(facts, "protocol", "%d", UFORM__MESH_PROTOCOL);
    if (status == UFORM_OK) status = uform__facts_set(facts, "version", "%d.%d.%d", major, minor, patch);
    if (status == UFORM_OK) status = uform__facts_set(facts, "index", "%zu", boot->index);
    if (status == UFORM_OK) status = uform__facts_set(facts, "count", "%zu", boot->count);
    if (status == UFORM_OK) status = uform__facts_set(facts, "gpus_per_multimem_domain", "%zu", options->gpus_per_multimem_domain);
    if (status == UFORM_OK) status = uform__facts_set(facts, "timeout_ms", "%lld", (long long)boot->timeout_ms);
    if (status == UFORM_OK) status = uform__facts_set(facts, "host", "%s", boot->host);
    if (status == UFORM_OK) status = uform__facts_set(facts, "pid", "%ld", (long)getpid());
    if (status == UFORM_OK) status = uform__facts_set(facts, "executor", "%s", executor_kind(executor));
    if (status == UFORM_OK) status = uform__facts_set(facts, "memory", "host");
    if (status == UFORM_OK) status = uform__facts_set(facts, "cpu_class", "%s", uform_cpu_class_name(cpu_class));
    if (status == UFORM_OK) status = uform__facts_set(facts, "address", "%s", address);
    if (status == UFORM_OK)
        status = uform__facts_set(facts, "overlap", "%s", options->overlap == UFORM_MESH_OVERLAP_NONE ? "none" : "backward");
    if (status == UFORM_OK) status = uform__facts_set(facts, "launcher", "%s", uform_mesh_launcher_name(launcher));
    if (status == UFORM_OK && options->trainer_config) status = uform__facts_add_trainer(facts, options->trainer_config);
    if (status != UFORM_OK)
        return uform__fail(boot->outcome, status, boot->function, "%s",
                           status == UFORM_INVALID_ARGUMENT ? "cannot hold this member's facts: a value is too long"
                                                            : "cannot allocate memory for this member's facts");
    if (options->agreement) {
        status = uform__facts_add_agreement(facts, options->agreement, boot->outcome, boot->function);
        if (status != UFORM_OK) return status;
    }
    status = uform__facts_add_fingerprint(facts);
    if (status != UFORM_OK)
        return uform__fail(boot->outcome, status, boot->function, "cannot allocate memory for this member's facts");
    return UFORM_OK;
}


/* What the options resolve to. */
typedef struct resolved_t {
    uform_mesh_launch_t launch;   /* launcher NONE when started by hand */
    const char *directory;        /* the folder, or NULL */
    const char *rendezvous;       /* the store's URL, or NULL */
} resolved_t;

/* The launcher AUTO: index, count, job and default rendezvous from the environment. */
static uform_status_t read_launcher(uform__bootstrap_t *boot, const uform_mesh_options_t *options, resolved_t *resolved) {
    const char *function = boot->function;
    uform_outcome_t *outcome = boot->outcome;
    if (options->launcher == UFORM_MESH_LAUNCHER_NONE) return UFORM_OK;
    if (options->launcher != UFORM_MESH_LAUNCHER_AUTO)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.launcher %d is neither UFORM_MESH_LAUNCHER_NONE nor UFORM_MESH_LAUNCHER_AUTO",
                           (int)options->launcher);
    uform_outcome_t read = {0};
    uform_mesh_launch_t *launch = &resolved->launch;
    if (uform_mesh_launch_read(launch, &read) != UFORM_OK)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s", read.message);
    if (launch->launcher == UFORM_MESH_LAUNCHER_NONE)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.launcher is AUTO, but no launcher's variables are set (torchrun's RANK, Open MPI's "
                           "OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK, Slurm's SLURM_PROCID): start the member with one, or "
                           "give its index and count");
    const char *name = uform_mesh_launcher_name(launch->launcher);
    if (options->host_domain_count && options->host_domain_count != launch->count)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.host_domain_count %zu conflicts with the %zu members %s started (%s)",
                           options->host_domain_count, launch->count, name, launch->variables);
    if (options->host_domain_index && options->host_domain_index != launch->index)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.host_domain_index %zu conflicts with index %zu from %s (%s)",
                           options->host_domain_index, launch->index, name, launch->variables);
    boot->index = launch->index, boot->count = launch->count;
    return UFORM_OK;
}

static int job_name_valid_or_say(uform__bootstrap_t *boot, const char *job) {
    if (job_name_valid(job)) return 1;
    uform__fail(boot->outcome, UFORM_INVALID_ARGUMENT, boot->function,
                "options.job '%s' is not one path component of letters, digits, '.', '-' and '_' (at most 128)", job);
    return 0;
}

static uform_status_t check_options(uform__bootstrap_t *boot, const uform_mesh_options_t *options, resolved_t *resolved) {
    const char *function = boot->function;
    uform_outcome_t *outcome = boot->outcome;
    if (options->gpus_per_multimem_domain)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "options.gpus_per_multimem_domain is %zu, but this build has no GPU support (a CPU member "
                           "needs 0)",
                           options->gpus_per_multimem_domain);
    if ((unsigned)options->overlap > UFORM_MESH_OVERLAP_NONE)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "options.overlap %d is not a uform_mesh_overlap_t",
                           (int)options->overlap);
    uform_status_t status = read_launcher(boot, options, resolved);
    if (status != UFORM_OK) return status;
    if (boot->index >= boot->count)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.host_domain_index %zu is out of range: the run has %zu member%s (indices 0 to %zu)",
                           boot->index, boot->count, boot->count == 1 ? "" : "s", boot->count - 1);
    double timeout = options->timeout_seconds;
    if (!(timeout >= 0) || timeout > 86400)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.timeout_seconds %g is not in [0, 86400] (0 takes 120)", timeout);
    boot->timeout_ms = timeout == 0 ? 120000 : (int64_t)ceil(timeout * 1000.0);
    if (boot->count == 1) return UFORM_OK;
    const uform_mesh_launch_t *launch = &resolved->launch;
    int has_directory = options->directory && options->directory[0];
    int has_rendezvous = options->rendezvous && options->rendezvous[0];
    if (has_directory && has_rendezvous)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.directory and options.rendezvous are both given: the members meet at one of them");
    if (has_directory) resolved->directory = options->directory;
    else if (has_rendezvous) resolved->rendezvous = options->rendezvous;
    else if (launch->rendezvous[0]) resolved->rendezvous = launch->rendezvous;
    else if (launch->launcher != UFORM_MESH_LAUNCHER_NONE)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "%s started %zu members on several hosts (%zu on this one) and nothing says where member 0 "
                           "is: export MASTER_ADDR and MASTER_PORT (member 0's host and a free port; the members meet "
                           "on the port after it), or name a rendezvous (tcp://HOST:PORT, redis://HOST:PORT or a shared "
                           "folder)",
                           uform_mesh_launcher_name(launch->launcher), boot->count, launch->local_count);
    else
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.directory is missing: a run of %zu members meets in directory/job, or at "
                           "options.rendezvous (tcp://HOST:PORT or redis://HOST:PORT)",
                           boot->count);
    const char *job = options->job ? options->job : launch->job[0] ? launch->job : NULL;
    if (!job && resolved->rendezvous && strncmp(resolved->rendezvous, "tcp://", 6) == 0)
        job = "uform"; /* the store is this run's own */
    if (!job)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.job is missing: a run of %zu members is named by its job in %s", boot->count,
                           resolved->directory ? "directory/job" : "the store's keys");
    if (!job_name_valid_or_say(boot, job)) return UFORM_INVALID_ARGUMENT;
    snprintf(boot->job, sizeof boot->job, "%s", job);
    if (options->address) {
        unsigned char ignored[16];
        if (inet_pton(AF_INET, options->address, ignored) != 1 && inet_pton(AF_INET6, options->address, ignored) != 1)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "options.address '%s' is not a numeric IPv4 or IPv6 address", options->address);
    }
    if (resolved->rendezvous) {
        uform__kv_url_t url;
        return uform__kv_url_parse(resolved->rendezvous, &url, outcome, function);
    }
    struct stat info;
    if (stat(options->directory, &info) != 0 || !S_ISDIR(info.st_mode))
        return uform__fail(outcome, UFORM_IO, function, "cannot use the directory '%s': %s", options->directory,
                           errno && stat(options->directory, &info) != 0 ? strerror(errno) : "not a directory");
    int written = snprintf(boot->job_path, sizeof boot->job_path, "%s/%s", options->directory, job);
    if (written < 0 || (size_t)written >= sizeof boot->job_path - 64)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "options.directory is too long");
    return UFORM_OK;
}

UFORM_API uform_status_t uform_mesh_bootstrap(uform_executor_t executor, const uform_mesh_options_t *options,
                                              uform_mesh_t *mesh, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (mesh) *mesh = NULL;
    if (!mesh) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "mesh is NULL");
    uform_mesh_options_t zero;
    memset(&zero, 0, sizeof zero);
    if (!options) options = &zero;
    uform__bootstrap_t boot;
    memset(&boot, 0, sizeof boot);
    boot.function = function, boot.outcome = outcome;
    boot.index = options->host_domain_index;
    boot.count = options->host_domain_count ? options->host_domain_count : 1;
    resolved_t resolved;
    memset(&resolved, 0, sizeof resolved);
    uform_status_t status = check_options(&boot, options, &resolved);
    if (status != UFORM_OK) return status;
    uform_cpu_class_t cpu_class = executor ? executor->cpu_class : UFORM_CPU_CLASS_UNKNOWN;
    if (!executor) {
        status = uform__cpu_class_resolve(UFORM_CPU_CLASS_UNKNOWN, &cpu_class, outcome, function);
        if (status != UFORM_OK) return status;
    }
    uform_mesh_t made = calloc(1, sizeof *made);
    if (!made) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a mesh");
    made->index = boot.index, made->count = boot.count, made->timeout_ms = boot.timeout_ms;
    made->cpu_class = cpu_class;
    made->launcher = resolved.launch.launcher;
    made->local_index = resolved.launch.local_index;
    made->local_count = resolved.launch.launcher != UFORM_MESH_LAUNCHER_NONE ? resolved.launch.local_count : 1;
    made->overlap = options->overlap;
    if (options->address) snprintf(made->address, sizeof made->address, "%s", options->address);
    else default_address(made->address, sizeof made->address);
    if (boot.count > 1) {
        /* The collectives' module first: without it this member cannot join, and its peers learn of
         * it by its absence (a timeout naming its index) rather than by a half-made rendezvous. */
        status = uform__gloo_load(&made->gloo_api, outcome, function);
        if (gethostname(boot.host, sizeof boot.host - 1) != 0) snprintf(boot.host, sizeof boot.host, "unknown");
        if (status == UFORM_OK) status = check_bindable(made->address, outcome, function);
        if (status == UFORM_OK)
            status = make_facts(&boot, executor, cpu_class, options, made->address, made->launcher);
        if (status == UFORM_OK)
            status = resolved.directory ? uform__bootstrap_folder(&boot, made)
                                        : uform__bootstrap_store(&boot, made, resolved.rendezvous);
        uform__facts_free(&boot.mine);
    }
    if (status == UFORM_OK && boot.count > 1) status = uform__mesh_overlap_start(made, outcome, function);
    if (status != UFORM_OK) {
        if (made->gloo) made->gloo_api->free(made->gloo);
        free(made);
        return status;
    }
    *mesh = made;
    return uform__succeed(outcome, function);
}

UFORM_API uform_status_t uform_mesh_describe(uform_mesh_t mesh, uform_mesh_description_t *description) {
    if (!description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    if (!mesh) return UFORM_INVALID_ARGUMENT;
    description->host_domain_index = mesh->index;
    description->members_per_host_domain = 1;
    description->members_total = mesh->count;
    description->first_member_index = mesh->index;
    description->multimem_tier = UFORM_MULTIMEM_TIER_SWITCH_REDUCED;
    description->gpu_class = UFORM_GPU_CLASS_UNKNOWN;
    description->launcher = mesh->launcher;
    description->local_member_index = mesh->local_index;
    description->local_members = mesh->local_count;
    description->overlap = mesh->overlap;
    return UFORM_OK;
}

UFORM_API void uform_mesh_free(uform_mesh_t mesh) {
    if (!mesh) return;
    uform__mesh_overlap_stop(mesh);
    if (mesh->gloo) mesh->gloo_api->free(mesh->gloo);
    free(mesh);
}
