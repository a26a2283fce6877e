/* refenv simulated driver: the host profile as the libraries see it.
 *
 * The host renders the profile into a key=value file (refenv/profiles.py, render_config); both
 * libraries read it once per process. Everything here is refenv's own: no NVIDIA header is used.
 */
#ifndef REFENV_SIM_CONFIG_H
#define REFENV_SIM_CONFIG_H

#include <stddef.h>

#define SIM_EXPORT __attribute__((visibility("default")))

#define SIM_MAX_GPUS 64
#define SIM_DEFAULT_CONF "/etc/refenv/simdriver.conf"
#define SIM_CONF_ENV "REFENV_SIMDRIVER_CONF"
#define SIM_TRACE_ENV "REFENV_SIMDRIVER_TRACE"

/* What cuDriverGetVersion reports when no configuration is found: the library itself still has a
 * version while the kernel side is absent (the real libcuda answers cuDriverGetVersion without
 * talking to the kernel module). 13000 = CUDA 13.0, the R580 branch. */
#define SIM_LIBRARY_CUDA_VERSION 13000

typedef struct {
    char name[96];
    unsigned long long memory_bytes;
    int cc_major;
    int cc_minor;
    int sm_count;
    char uuid[80];                 /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    unsigned char uuid_bytes[16];
    char pci_bus_id[32];           /* NVML form: "00000000:18:00.0" */
    unsigned pci_domain;
    unsigned pci_bus;
    unsigned pci_device;
    unsigned pci_function;
    unsigned pci_device_id;        /* (device << 16) | vendor, as NVML reports it */
    int minor;                     /* /dev/nvidia<minor> */
} sim_gpu;

typedef struct {
    int found;                     /* a configuration file was read */
    int malformed;                 /* ... but it could not be parsed: see message */
    int control_missing;           /* require_device_nodes and /dev/nvidiactl absent */
    int control_denied;            /* ... present, but open() fails with this errno (EPERM: the device cgroup) */
    int uvm_error;                 /* ... /dev/nvidia-uvm absent (ENOENT) or not openable (ENXIO: no driver) */
    char path[1024];
    char message[320];
    char profile[64];
    char driver_version[32];
    int cuda_driver_version;
    int nvml_init_error;
    int cuinit_error;
    int cuinit_hang;               /* 1: cuInit never returns once it reaches a visible GPU (a hung driver or GPU) */
    int stub;
    int require_device_nodes;
    int gpu_count;
    sim_gpu gpus[SIM_MAX_GPUS];
} sim_config;

/* The process-wide configuration, read on first use. */
const sim_config *sim_config_get(void);

/* Parse a configuration text; returns 0 or -1 with cfg->message naming the line. */
int sim_config_parse(const char *text, sim_config *cfg);

/* Append one line to the file named by REFENV_SIMDRIVER_TRACE, when set. */
void sim_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The CUDA ordinals CUDA_VISIBLE_DEVICES selects (value NULL = unset); returns how many. */
int sim_visible_devices(const char *value, const sim_gpu *gpus, int gpu_count, int *out, int cap);

/* A small bounded JSON writer for the info functions. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
} sim_json;

void sim_json_raw(sim_json *j, const char *text);
void sim_json_key(sim_json *j, const char *key, int first);
void sim_json_str(sim_json *j, const char *value);
void sim_json_int(sim_json *j, long long value);
void sim_json_bool(sim_json *j, int value);
/* Opens the self-description object both libraries share: library, configuration, profile, versions. */
void sim_json_config_head(sim_json *j, const sim_config *cfg, const char *library, int cuda_driver_version);

#endif
