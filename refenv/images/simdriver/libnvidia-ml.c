/* refenv simulated driver: libnvidia-ml.so.1.
 *
 * Enough NVML for refenv's harness, for nvidia-ml-py (pynvml), for torch's own NVML use
 * (torch/cuda/__init__.py: nvmlInit, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 * nvmlDeviceGetUUID) and for refenv's nvidia-smi. Like the real NVML it ignores
 * CUDA_VISIBLE_DEVICES and lists every GPU the host gave the container. Signatures and structure
 * layouts follow the NVML API reference (docs.nvidia.com/deploy/nvml-api); the declarations are
 * refenv's own.
 */
#include "sim_config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
};

typedef struct sim_nvml_device {
    int index;
} *nvmlDevice_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} sim_memory_v1;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} sim_memory_v2;

/* nvmlMemory_v2: the structure size with the version in the top byte (NVML_STRUCT_VERSION). */
#define SIM_MEMORY_V2_VERSION ((unsigned int)(sizeof(sim_memory_v2) | (2u << 24)))

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} sim_pci_info;

static struct sim_nvml_device g_devices[SIM_MAX_GPUS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_refcount;
static int g_init_calls;
static nvmlReturn_t g_last_init = -1;
static int g_count_queried;

/* ---- errors ---------------------------------------------------------------------------------- */

/* nvmlErrorString texts; 18 is what nvidia-smi prints after "Failed to initialize NVML: ". */
static const struct {
    int code;
    const char *text;
} k_errors[] = {
    {0, "Success"},
    {1, "Uninitialized"},
    {2, "Invalid Argument"},
    {3, "Not Supported"},
    {4, "Insufficient Permissions"},
    {5, "Already Initialized"},
    {6, "Not Found"},
    {7, "Insufficient Size"},
    {8, "Insufficient External Power"},
    {9, "Driver Not Loaded"},
    {10, "Timeout"},
    {11, "Interrupt Request Issue"},
    {12, "NVML Shared Library Not Found"},
    {13, "Function Not Found"},
    {14, "Corrupted infoROM"},
    {15, "GPU is lost"},
    {16, "GPU requires restart"},
    {17, "The operating system has blocked the request."},
    {18, "Driver/library version mismatch"},
    {20, "Insufficient Memory"},
    {25, "Argument version mismatch"},
    {999, "Unknown Error"},
};

SIM_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    size_t i;
    for (i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++) {
        if (k_errors[i].code == result) {
            return k_errors[i].text;
        }
    }
    return "Unknown Error";
}

/* ---- init ------------------------------------------------------------------------------------ */

static nvmlReturn_t init_result(const sim_config *cfg)
{
    if (cfg->malformed) {
        return NVML_ERROR_UNKNOWN;
    }
    if (!cfg->found || cfg->control_missing) {
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    /* /dev/nvidiactl present but denied: "Failed to initialize NVML: Unknown Error" (toolkit#48). */
    if (cfg->control_denied != 0) {
        return NVML_ERROR_UNKNOWN;
    }
    return cfg->nvml_init_error;
}

SIM_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    const sim_config *cfg = sim_config_get();
    nvmlReturn_t r = init_result(cfg);
    int g;
    (void)flags;
    pthread_mutex_lock(&g_lock);
    g_init_calls++;
    g_last_init = r;
    if (r == NVML_SUCCESS) {
        for (g = 0; g < cfg->gpu_count; g++) {
            g_devices[g].index = g;
        }
        g_refcount++;
    }
    pthread_mutex_unlock(&g_lock);
    sim_trace("nvmlInit -> %d", r);
    return r;
}

SIM_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

SIM_EXPORT nvmlReturn_t nvmlInit(void)
{
    return nvmlInitWithFlags(0);
}

SIM_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t r = NVML_SUCCESS;
    pthread_mutex_lock(&g_lock);
    if (g_refcount == 0) {
        r = NVML_ERROR_UNINITIALIZED;
    } else {
        g_refcount--;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

static int initialized(void)
{
    int up;
    pthread_mutex_lock(&g_lock);
    up = g_refcount > 0;
    pthread_mutex_unlock(&g_lock);
    return up;
}

static nvmlReturn_t put_string(char *dst, unsigned int length, const char *text)
{
    if (dst == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (strlen(text) + 1 > length) {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(dst, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

static const sim_gpu *gpu_of(nvmlDevice_t device, nvmlReturn_t *err)
{
    const sim_config *cfg = sim_config_get();
    if (!initialized()) {
        *err = NVML_ERROR_UNINITIALIZED;
        return NULL;
    }
    if (device == NULL || device < g_devices || device >= g_devices + cfg->gpu_count) {
        *err = NVML_ERROR_INVALID_ARGUMENT;
        return NULL;
    }
    *err = NVML_SUCCESS;
    return &cfg->gpus[device->index];
}

/* ---- system ---------------------------------------------------------------------------------- */

SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!initialized()) {
        return NVML_ERROR_UNINITIALIZED;
    }
    return put_string(version, length, sim_config_get()->driver_version);
}

/* The NVML version is the CUDA major of the driver followed by the driver version, e.g.
 * "13.580.95.05" (nvidia-ml-py takes its release numbers from it). It answers before nvmlInit,
 * which is how nvidia-smi can print "NVML library version" after a failed initialisation. */
SIM_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    const sim_config *cfg = sim_config_get();
    char text[80];
    if (!cfg->found || cfg->malformed) {
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    snprintf(text, sizeof text, "%d.%s", cfg->cuda_driver_version / 1000, cfg->driver_version);
    return put_string(version, length, text);
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    if (!initialized()) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (cudaDriverVersion == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *cudaDriverVersion = sim_config_get()->cuda_driver_version;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

/* ---- devices --------------------------------------------------------------------------------- */

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (!initialized()) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (deviceCount == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    g_count_queried = 1;
    *deviceCount = (unsigned int)sim_config_get()->gpu_count;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return nvmlDeviceGetCount_v2(deviceCount);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!initialized()) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (device == NULL || index >= (unsigned int)sim_config_get()->gpu_count) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *device = &g_devices[index];
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    const sim_config *cfg = sim_config_get();
    int g;
    if (!initialized()) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (uuid == NULL || device == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (g = 0; g < cfg->gpu_count; g++) {
        if (strcmp(cfg->gpus[g].uuid, uuid) == 0) {
            *device = &g_devices[g];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    const sim_config *cfg = sim_config_get();
    unsigned d, b, dev, f;
    int g;
    if (!initialized()) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (pciBusId == NULL || device == NULL || sscanf(pciBusId, "%x:%x:%x.%x", &d, &b, &dev, &f) != 4) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (g = 0; g < cfg->gpu_count; g++) {
        const sim_gpu *x = &cfg->gpus[g];
        if (x->pci_domain == d && x->pci_bus == b && x->pci_device == dev && x->pci_function == f) {
            *device = &g_devices[g];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    nvmlReturn_t err;
    const sim_gpu *gpu = gpu_of(device, &err);
    return gpu ? put_string(name, length, gpu->name) : err;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    nvmlReturn_t err;
    const sim_gpu *gpu = gpu_of(device, &err);
    return gpu ? put_string(uuid, length, gpu->uuid) : err;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    nvmlReturn_t err;
    if (gpu_of(device, &err) == NULL) {
        return err;
    }
    if (index == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *index = (unsigned int)device->index;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    nvmlReturn_t err;
    const sim_gpu *gpu = gpu_of(device, &err);
    if (gpu == NULL) {
        return err;
    }
    if (minorNumber == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *minorNumber = (unsigned int)gpu->minor;
    return NVML_SUCCESS;
}

/* No process runs on a simulated GPU: all of its memory is free. */
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, sim_memory_v1 *memory)
{
    nvmlReturn_t err;
    const sim_gpu *gpu = gpu_of(device, &err);
    if (gpu == NULL) {
        return err;
    }
    if (memory == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memory->total = gpu->memory_bytes;
    memory->free = gpu->memory_bytes;
    memory->used = 0;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, sim_memory_v2 *memory)
{
    nvmlReturn_t err;
    const sim_gpu *gpu = gpu_of(device, &err);
    if (gpu == NULL) {
        return err;
    }
    if (memory == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (memory->version != SIM_MEMORY_V2_VERSION) {
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    memory->total = gpu->memory_bytes;
    memory->reserved = 0;
    memory->free = gpu->memory_bytes;
    memory->used = 0;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, sim_pci_info *pci)
{
    nvmlReturn_t err;
    const sim_gpu *gpu = gpu_of(device, &err);
    if (gpu == NULL) {
        return err;
    }
    if (pci == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", gpu->pci_domain & 0xffff,
             gpu->pci_bus, gpu->pci_device, gpu->pci_function);
    snprintf(pci->busId, sizeof pci->busId, "%s", gpu->pci_bus_id);
    pci->domain = gpu->pci_domain;
    pci->bus = gpu->pci_bus;
    pci->device = gpu->pci_device;
    pci->pciDeviceId = gpu->pci_device_id;
    return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, sim_pci_info *pci)
{
    return nvmlDeviceGetPciInfo_v3(device, pci);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    nvmlReturn_t err;
    const sim_gpu *gpu = gpu_of(device, &err);
    if (gpu == NULL) {
        return err;
    }
    if (major == NULL || minor == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *major = gpu->cc_major;
    *minor = gpu->cc_minor;
    return NVML_SUCCESS;
}

/* Live sensors are not simulated: a clean "Not Supported" rather than an invented reading. */
#define SIM_NOT_SUPPORTED(fn)                                                                           \
    SIM_EXPORT nvmlReturn_t fn(nvmlDevice_t device, void *a, void *b)                                   \
    {                                                                                                   \
        nvmlReturn_t err;                                                                               \
        (void)a;                                                                                        \
        (void)b;                                                                                        \
        return gpu_of(device, &err) ? NVML_ERROR_NOT_SUPPORTED : err;                                   \
    }
SIM_NOT_SUPPORTED(nvmlDeviceGetTemperature)
SIM_NOT_SUPPORTED(nvmlDeviceGetPowerUsage)
SIM_NOT_SUPPORTED(nvmlDeviceGetPowerManagementLimit)
SIM_NOT_SUPPORTED(nvmlDeviceGetUtilizationRates)
SIM_NOT_SUPPORTED(nvmlDeviceGetClockInfo)
SIM_NOT_SUPPORTED(nvmlDeviceGetMaxClockInfo)
SIM_NOT_SUPPORTED(nvmlDeviceGetCurrentClocksEventReasons)
SIM_NOT_SUPPORTED(nvmlDeviceGetCurrentClocksThrottleReasons)
SIM_NOT_SUPPORTED(nvmlDeviceGetPerformanceState)
SIM_NOT_SUPPORTED(nvmlDeviceGetFanSpeed)
#undef SIM_NOT_SUPPORTED

/* ---- what this process saw, for refenv's harness -------------------------------------------- */

SIM_EXPORT const char *refenvSimulatedNvmlInfo(void)
{
    static char buf[1536];
    const sim_config *cfg = sim_config_get();
    sim_json j = {buf, sizeof buf, 0};

    pthread_mutex_lock(&g_lock);
    buf[0] = '\0';
    sim_json_config_head(&j, cfg, "libnvidia-ml.so.1", cfg->cuda_driver_version);
    sim_json_key(&j, "init_calls", 0);
    sim_json_int(&j, g_init_calls);
    sim_json_key(&j, "init_result", 0);
    if (g_init_calls > 0) {
        sim_json_int(&j, g_last_init);
    } else {
        sim_json_raw(&j, "null");
    }
    sim_json_key(&j, "device_count_queried", 0);
    sim_json_bool(&j, g_count_queried);
    sim_json_raw(&j, "}");
    pthread_mutex_unlock(&g_lock);
    return buf;
}
