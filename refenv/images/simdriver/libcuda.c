/* refenv simulated driver: libcuda.so.1.
 *
 * Implements the documented driver-API entry points a CUDA runtime needs to decide whether it can
 * run (version, cuInit, device enumeration and properties), configured by the host profile. Every
 * other entry point the runtime asks for through cuGetProcAddress resolves to a placeholder that
 * answers CUDA_ERROR_NOT_SUPPORTED, and cuGetExportTable always answers not supported: NVIDIA's
 * private export tables are not implemented. The driver records the stage it reached in this
 * process; refenvSimulatedDriverInfo() returns it as JSON.
 *
 * Signatures follow the CUDA Driver API reference (docs.nvidia.com/cuda/cuda-driver-api);
 * the declarations are refenv's own.
 */
#include "sim_config.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct {
    unsigned char bytes[16];
} sim_uuid;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999
};

/* CUdriverProcAddressQueryResult */
enum { PROC_SUCCESS = 0, PROC_SYMBOL_NOT_FOUND = 1, PROC_VERSION_NOT_SUFFICIENT = 2 };

/* CUdevice_attribute values used here (Driver API reference, CUdevice_attribute). */
enum {
    ATTR_MAX_THREADS_PER_BLOCK = 1,
    ATTR_MAX_BLOCK_DIM_X = 2,
    ATTR_MAX_BLOCK_DIM_Y = 3,
    ATTR_MAX_BLOCK_DIM_Z = 4,
    ATTR_MAX_GRID_DIM_X = 5,
    ATTR_MAX_GRID_DIM_Y = 6,
    ATTR_MAX_GRID_DIM_Z = 7,
    ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    ATTR_WARP_SIZE = 10,
    ATTR_MULTIPROCESSOR_COUNT = 16,
    ATTR_PCI_BUS_ID = 33,
    ATTR_PCI_DEVICE_ID = 34,
    ATTR_PCI_DOMAIN_ID = 50,
    ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    ATTR_COMPUTE_CAPABILITY_MINOR = 76
};

/* ---- the stage this process reached ----------------------------------------------------------- */

static struct {
    int driver_version_queried;
    int cuinit_called;
    int cuinit_result;
    int device_count_queried;
    int device_count;
    int export_table_requested;
    int runtime_accepted;
    int proc_address_requests;
    int placeholder_calls;
    char first_placeholder_call[64];
} g_stage = {0, 0, -1, 0, -1, 0, 0, 0, 0, ""};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_init_done;
static CUresult g_init_result;
static int g_visible[SIM_MAX_GPUS];
static int g_visible_count;

static void mark(int *flag)
{
    __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
}

/* The runtime asks for the driver's version before cuInit and refuses a driver that is too old
 * (facts/cuda-compat.md, measured); a cuInit or device query after that query means it accepted. */
static void note_progress(void)
{
    if (__atomic_load_n(&g_stage.driver_version_queried, __ATOMIC_SEQ_CST)) {
        mark(&g_stage.runtime_accepted);
    }
}

static CUresult stub_or(CUresult otherwise)
{
    return sim_config_get()->stub ? CUDA_ERROR_STUB_LIBRARY : otherwise;
}

static const sim_gpu *device_of(CUdevice dev, CUresult *err)
{
    const sim_config *cfg = sim_config_get();
    if (cfg->stub) {
        *err = CUDA_ERROR_STUB_LIBRARY;
        return NULL;
    }
    if (!__atomic_load_n(&g_init_done, __ATOMIC_ACQUIRE) || g_init_result != CUDA_SUCCESS) {
        *err = CUDA_ERROR_NOT_INITIALIZED;
        return NULL;
    }
    if (dev < 0 || dev >= g_visible_count) {
        *err = CUDA_ERROR_INVALID_DEVICE;
        return NULL;
    }
    *err = CUDA_SUCCESS;
    return &cfg->gpus[g_visible[dev]];
}

/* ---- error texts (Driver API reference, CUresult) --------------------------------------------- */

static const struct {
    int code;
    const char *name;
    const char *text;
} k_errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_text(CUresult error, const char **out, int want_name)
{
    size_t i;
    if (out == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++) {
        if (k_errors[i].code == error) {
            *out = want_name ? k_errors[i].name : k_errors[i].text;
            return CUDA_SUCCESS;
        }
    }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    return error_text(error, pStr, 0);
}

SIM_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    return error_text(error, pStr, 1);
}

/* ---- version, initialisation, devices --------------------------------------------------------- */

SIM_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    const sim_config *cfg = sim_config_get();
    if (cfg->stub) {
        return CUDA_ERROR_STUB_LIBRARY;
    }
    if (driverVersion == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    mark(&g_stage.driver_version_queried);
    *driverVersion = cfg->found && !cfg->malformed ? cfg->cuda_driver_version : SIM_LIBRARY_CUDA_VERSION;
    sim_trace("cuDriverGetVersion -> %d", *driverVersion);
    return CUDA_SUCCESS;
}

static CUresult first_init(const sim_config *cfg)
{
    if (cfg->stub) {
        return CUDA_ERROR_STUB_LIBRARY;
    }
    if (cfg->malformed) {
        return CUDA_ERROR_UNKNOWN;
    }
    /* No configuration or no /dev/nvidiactl: the kernel module is not there. The real libcuda then
     * answers CUDA_ERROR_NO_DEVICE (seen with the device nodes missing from a container). */
    if (!cfg->found || cfg->control_missing) {
        return CUDA_ERROR_NO_DEVICE;
    }
    /* The control node there but not openable (the device cgroup), or no working nvidia-uvm: the real
     * libcuda answers CUDA_ERROR_UNKNOWN, torch's "CUDA unknown error" (nvidia-uvm missing or its module
     * unloaded is the classic cause; the same words in containers that lost their device access). */
    if (cfg->control_denied != 0) {
        return CUDA_ERROR_UNKNOWN;
    }
    if (cfg->cuinit_error != 0) {
        return cfg->cuinit_error;
    }
    if (cfg->uvm_error != 0) {
        return CUDA_ERROR_UNKNOWN;
    }
    g_visible_count = sim_visible_devices(getenv("CUDA_VISIBLE_DEVICES"), cfg->gpus, cfg->gpu_count,
                                          g_visible, SIM_MAX_GPUS);
    return g_visible_count > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

/* A hung driver (a GPU fallen off the bus, Xid 79, or a driver stuck after an error): cuInit gets as far
 * as a working driver's would, to the GPUs it is to initialise, and never returns; so torch's
 * is_available(), which asks cudaGetDeviceCount and so cuInit, blocks too. Without a visible GPU it has
 * none to wait for and answers as a working driver does. The process lock is not held while it blocks,
 * so refenvSimulatedDriverInfo still answers (cuinit_called, no result). */
static int hangs_here(const sim_config *cfg)
{
    int visible[SIM_MAX_GPUS];
    if (!cfg->cuinit_hang || cfg->stub || cfg->malformed || !cfg->found || cfg->control_missing ||
        cfg->control_denied != 0 || cfg->cuinit_error != 0 || cfg->uvm_error != 0) {
        return 0;
    }
    return sim_visible_devices(getenv("CUDA_VISIBLE_DEVICES"), cfg->gpus, cfg->gpu_count, visible,
                               SIM_MAX_GPUS) > 0;
}

SIM_EXPORT CUresult cuInit(unsigned int flags)
{
    const sim_config *cfg = sim_config_get();
    CUresult result;
    mark(&g_stage.cuinit_called);
    note_progress();
    if (flags != 0) {
        return stub_or(CUDA_ERROR_INVALID_VALUE);
    }
    if (hangs_here(cfg)) {
        sim_trace("cuInit blocks (cuinit_hang=1)");
        for (;;) {
            pause(); /* a signal's handler runs and the wait goes on; SIGKILL ends the process */
        }
    }
    pthread_mutex_lock(&g_lock);
    if (!g_init_done) {
        /* The first call decides; the driver reads CUDA_VISIBLE_DEVICES once, here. */
        g_init_result = first_init(cfg);
        __atomic_store_n(&g_init_done, 1, __ATOMIC_RELEASE);
    }
    result = g_init_result;
    g_stage.cuinit_result = result;
    pthread_mutex_unlock(&g_lock);
    sim_trace("cuInit -> %d (%d visible)", result, g_visible_count);
    return result;
}

SIM_EXPORT CUresult cuDeviceGetCount(int *count)
{
    const sim_config *cfg = sim_config_get();
    if (cfg->stub) {
        return CUDA_ERROR_STUB_LIBRARY;
    }
    if (count == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    mark(&g_stage.device_count_queried);
    note_progress();
    if (!__atomic_load_n(&g_init_done, __ATOMIC_ACQUIRE) || g_init_result != CUDA_SUCCESS) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    *count = g_visible_count;
    __atomic_store_n(&g_stage.device_count, g_visible_count, __ATOMIC_SEQ_CST);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult err;
    if (device == NULL) {
        return stub_or(CUDA_ERROR_INVALID_VALUE);
    }
    if (device_of(ordinal, &err) != NULL) {
        *device = ordinal;
    }
    return err;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult err;
    const sim_gpu *gpu = device_of(dev, &err);
    if (gpu == NULL) {
        return err;
    }
    if (name == NULL || len <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    snprintf(name, (size_t)len, "%s", gpu->name);
    return CUDA_SUCCESS;
}

/* The CUDA 2.0 form with a 32-bit byte count; _v2 (CUDA 3.2) takes a size_t. */
SIM_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    CUresult err;
    const sim_gpu *gpu = device_of(dev, &err);
    if (gpu == NULL) {
        return err;
    }
    if (bytes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *bytes = gpu->memory_bytes > UINT_MAX ? UINT_MAX : (unsigned int)gpu->memory_bytes;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult err;
    const sim_gpu *gpu = device_of(dev, &err);
    if (gpu == NULL) {
        return err;
    }
    if (bytes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *bytes = (size_t)gpu->memory_bytes;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult err;
    const sim_gpu *gpu = device_of(dev, &err);
    if (gpu == NULL) {
        return err;
    }
    if (major == NULL || minor == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *major = gpu->cc_major;
    *minor = gpu->cc_minor;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)
{
    CUresult err;
    const sim_gpu *gpu = device_of(dev, &err);
    if (gpu == NULL) {
        return err;
    }
    if (pi == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    switch (attrib) {
    /* Limits common to every architecture since Fermi (CUDA C Programming Guide, "Technical
     * Specifications per Compute Capability"). */
    case ATTR_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case ATTR_MAX_BLOCK_DIM_X: *pi = 1024; break;
    case ATTR_MAX_BLOCK_DIM_Y: *pi = 1024; break;
    case ATTR_MAX_BLOCK_DIM_Z: *pi = 64; break;
    case ATTR_MAX_GRID_DIM_X: *pi = 2147483647; break;
    case ATTR_MAX_GRID_DIM_Y: *pi = 65535; break;
    case ATTR_MAX_GRID_DIM_Z: *pi = 65535; break;
    case ATTR_MAX_SHARED_MEMORY_PER_BLOCK: *pi = 49152; break;
    case ATTR_WARP_SIZE: *pi = 32; break;
    case ATTR_MULTIPROCESSOR_COUNT: *pi = gpu->sm_count; break;
    case ATTR_PCI_BUS_ID: *pi = (int)gpu->pci_bus; break;
    case ATTR_PCI_DEVICE_ID: *pi = (int)gpu->pci_device; break;
    case ATTR_PCI_DOMAIN_ID: *pi = (int)gpu->pci_domain; break;
    case ATTR_COMPUTE_CAPABILITY_MAJOR: *pi = gpu->cc_major; break;
    case ATTR_COMPUTE_CAPABILITY_MINOR: *pi = gpu->cc_minor; break;
    default:
        /* A real attribute this simulation does not model: say so rather than invent a value. */
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetUuid(sim_uuid *uuid, CUdevice dev)
{
    CUresult err;
    const sim_gpu *gpu = device_of(dev, &err);
    if (gpu == NULL) {
        return err;
    }
    if (uuid == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(uuid->bytes, gpu->uuid_bytes, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}

/* _v2 differs only for MIG instances, which are not simulated. */
SIM_EXPORT CUresult cuDeviceGetUuid_v2(sim_uuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

SIM_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult err;
    const sim_gpu *gpu = device_of(dev, &err);
    if (gpu == NULL) {
        return err;
    }
    if (pciBusId == NULL || len <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    snprintf(pciBusId, (size_t)len, "%04X:%02X:%02X.%X", gpu->pci_domain, gpu->pci_bus, gpu->pci_device,
             gpu->pci_function);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const void *pExportTableId)
{
    (void)pExportTableId;
    __atomic_add_fetch(&g_stage.export_table_requested, 1, __ATOMIC_SEQ_CST);
    if (ppExportTable != NULL) {
        *ppExportTable = NULL;
    }
    sim_trace("cuGetExportTable -> not supported");
    return stub_or(CUDA_ERROR_NOT_SUPPORTED);
}

/* ---- cuGetProcAddress ----------------------------------------------------------------------------- */

static CUresult placeholder(const char *name)
{
    if (__atomic_add_fetch(&g_stage.placeholder_calls, 1, __ATOMIC_SEQ_CST) == 1) {
        snprintf(g_stage.first_placeholder_call, sizeof g_stage.first_placeholder_call, "%s", name);
    }
    sim_trace("placeholder %s -> not supported", name);
    return stub_or(CUDA_ERROR_NOT_SUPPORTED);
}

/* One placeholder per driver-API name the real runtimes ask for (driver_api_names.inc, gathered by
 * tracing cudart 12.0-13.0), so the stage record can say which one was called first. Called with
 * whatever arguments the caller passes, which the x86-64 and AArch64 calling conventions allow. */
#define SIM_NAME(n)                                                                                     \
    static CUresult ph_##n(void)                                                                        \
    {                                                                                                   \
        return placeholder(#n);                                                                         \
    }
#include "driver_api_names.inc"
#undef SIM_NAME

typedef CUresult (*sim_fn)(void);

static const struct {
    const char *name;
    sim_fn fn;
} k_placeholders[] = {
#define SIM_NAME(n) {#n, ph_##n},
#include "driver_api_names.inc"
#undef SIM_NAME
};

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags,
                             int *symbolStatus);

/* Implemented entry points by the name the runtime asks for and the CUDA version that introduced
 * each variant; a request gets the newest variant not newer than the version it names. */
static const struct {
    const char *name;
    int since;
    void *fn;
} k_implemented[] = {
    {"cuInit", 2000, (void *)cuInit},
    {"cuDriverGetVersion", 2020, (void *)cuDriverGetVersion},
    {"cuGetErrorString", 6000, (void *)cuGetErrorString},
    {"cuGetErrorName", 6000, (void *)cuGetErrorName},
    {"cuDeviceGet", 2000, (void *)cuDeviceGet},
    {"cuDeviceGetCount", 2000, (void *)cuDeviceGetCount},
    {"cuDeviceGetName", 2000, (void *)cuDeviceGetName},
    {"cuDeviceTotalMem", 2000, (void *)cuDeviceTotalMem},
    {"cuDeviceTotalMem", 3020, (void *)cuDeviceTotalMem_v2},
    {"cuDeviceComputeCapability", 2000, (void *)cuDeviceComputeCapability},
    {"cuDeviceGetAttribute", 2000, (void *)cuDeviceGetAttribute},
    {"cuDeviceGetUuid", 9020, (void *)cuDeviceGetUuid},
    {"cuDeviceGetUuid", 11040, (void *)cuDeviceGetUuid_v2},
    {"cuDeviceGetPCIBusId", 4010, (void *)cuDeviceGetPCIBusId},
    {"cuGetExportTable", 3000, (void *)cuGetExportTable},
    {"cuGetProcAddress", 11030, (void *)cuGetProcAddress},
    {"cuGetProcAddress", 12000, (void *)cuGetProcAddress_v2},
};

static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, int *status)
{
    size_t i;
    int best = -1, known = 0;
    for (i = 0; i < sizeof k_implemented / sizeof k_implemented[0]; i++) {
        if (strcmp(k_implemented[i].name, symbol) == 0) {
            known = 1;
            if (k_implemented[i].since <= cudaVersion &&
                (best < 0 || k_implemented[i].since > k_implemented[best].since)) {
                best = (int)i;
            }
        }
    }
    if (best >= 0) {
        *pfn = k_implemented[best].fn;
        *status = PROC_SUCCESS;
        return CUDA_SUCCESS;
    }
    if (known) {
        *status = PROC_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    for (i = 0; i < sizeof k_placeholders / sizeof k_placeholders[0]; i++) {
        if (strcmp(k_placeholders[i].name, symbol) == 0) {
            *pfn = (void *)k_placeholders[i].fn;
            *status = PROC_SUCCESS;
            return CUDA_SUCCESS;
        }
    }
    *status = PROC_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        unsigned long long flags, int *symbolStatus)
{
    int status = PROC_SYMBOL_NOT_FOUND;
    CUresult result;
    if (sim_config_get()->stub) {
        return CUDA_ERROR_STUB_LIBRARY;
    }
    if (symbol == NULL || pfn == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    __atomic_add_fetch(&g_stage.proc_address_requests, 1, __ATOMIC_SEQ_CST);
    *pfn = NULL;
    result = lookup(symbol, pfn, cudaVersion, &status);
    if (symbolStatus != NULL) {
        *symbolStatus = status;
    }
    sim_trace("cuGetProcAddress %s %d %llu -> %d status %d", symbol, cudaVersion, flags, result, status);
    return result;
}

SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- what this process reached, for refenv's harness ------------------------------------------- */

SIM_EXPORT const char *refenvSimulatedDriverInfo(void)
{
    static char buf[2048];
    const sim_config *cfg = sim_config_get();
    sim_json j = {buf, sizeof buf, 0};
    int version;

    pthread_mutex_lock(&g_lock);
    buf[0] = '\0';
    version = cfg->found && !cfg->malformed ? cfg->cuda_driver_version : SIM_LIBRARY_CUDA_VERSION;
    sim_json_config_head(&j, cfg, "libcuda.so.1", version);
    sim_json_key(&j, "visible_devices", 0);
    if (g_init_done && g_init_result == CUDA_SUCCESS) {
        int i;
        sim_json_raw(&j, "[");
        for (i = 0; i < g_visible_count; i++) {
            if (i) {
                sim_json_raw(&j, ", ");
            }
            sim_json_int(&j, g_visible[i]);
        }
        sim_json_raw(&j, "]");
    } else {
        sim_json_raw(&j, "null");
    }
    sim_json_key(&j, "stage", 0);
    sim_json_raw(&j, "{");
    sim_json_key(&j, "driver_version_queried", 1);
    sim_json_bool(&j, g_stage.driver_version_queried);
    sim_json_key(&j, "cuinit_called", 0);
    sim_json_bool(&j, g_stage.cuinit_called);
    sim_json_key(&j, "cuinit_result", 0);
    if (g_stage.cuinit_called && g_init_done) {
        sim_json_int(&j, g_stage.cuinit_result);
    } else {
        sim_json_raw(&j, "null");
    }
    sim_json_key(&j, "device_count_queried", 0);
    sim_json_bool(&j, g_stage.device_count_queried);
    sim_json_key(&j, "device_count", 0);
    if (g_stage.device_count >= 0) {
        sim_json_int(&j, g_stage.device_count);
    } else {
        sim_json_raw(&j, "null");
    }
    sim_json_key(&j, "export_table_requested", 0);
    sim_json_bool(&j, g_stage.export_table_requested > 0);
    sim_json_key(&j, "runtime_accepted", 0);
    sim_json_bool(&j, g_stage.runtime_accepted);
    sim_json_key(&j, "proc_address_requests", 0);
    sim_json_int(&j, g_stage.proc_address_requests);
    sim_json_key(&j, "unsupported_calls", 0);
    sim_json_int(&j, g_stage.placeholder_calls);
    sim_json_key(&j, "first_unsupported_call", 0);
    if (g_stage.placeholder_calls > 0) {
        sim_json_str(&j, g_stage.first_placeholder_call);
    } else {
        sim_json_raw(&j, "null");
    }
    sim_json_raw(&j, "}}");
    pthread_mutex_unlock(&g_lock);
    return buf;
}

/* CUDA_VISIBLE_DEVICES as this driver applies it to the configured GPUs, for refenv's tests: the
 * ordinals `value` selects (NULL = unset), without touching the process's own cuInit state. */
SIM_EXPORT int refenvSimulatedVisibleDevices(const char *value, int *out, int cap)
{
    const sim_config *cfg = sim_config_get();
    return sim_visible_devices(value, cfg->gpus, cfg->gpu_count, out, cap);
}
