/* Start a compiled Triton kernel on CUDA with as little host work as a launch allows.
 *
 * Built and loaded by cuda_start.py. make() takes everything that is fixed for a kept launch
 * (the kernel's function handle, grid, block, shared memory, launch attributes, and its
 * parameters packed as the kernel takes them); a Starter called with a stream and the data
 * pointers of its tensors writes the pointers into a copy of the packed parameters and calls
 * cuLaunchKernelEx. Triton's own launch parses all of its arguments on every call, which on a
 * tiny tensor costs more host time than the kernel runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_PARAMS 64
#define MAX_BYTES 512
#define MAX_POINTERS 8

typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
static launch_ex_t launch_ex = NULL;

/* The driver's cuLaunchKernelEx, found on the first start (Triton has loaded the driver). */
static int find_launch(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  launch_ex = cuda == NULL ? NULL : (launch_ex_t)dlsym(cuda, "cuLaunchKernelEx");
  if (launch_ex == NULL)
    PyErr_SetString(PyExc_RuntimeError, "libcuda.so.1 with cuLaunchKernelEx not found");
  return launch_ex != NULL;
}

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  CUfunction function;
  CUlaunchConfig config;
  CUlaunchAttribute attrs[2];
  int n_params, n_pointers;
  size_t n_bytes;
  size_t param_at[MAX_PARAMS];
  size_t pointer_at[MAX_POINTERS];
  _Alignas(8) unsigned char values[MAX_BYTES];
} Starter;

/* starter(stream, pointer, ...) -> bool. False, launching nothing, when a pointer is not
 * 16-byte aligned (the kernel was compiled for aligned ones) or when this thread has no CUDA
 * context (Triton's launch, which the caller then takes, makes one current). */
static PyObject *starter_call(PyObject *op, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
  Starter *self = (Starter *)op;
  if (kwnames != NULL || PyVectorcall_NARGS(nargsf) != 1 + self->n_pointers) {
    PyErr_Format(PyExc_TypeError, "a Starter takes a stream and %d pointers",
                 self->n_pointers);
    return NULL;
  }
  uint64_t pointers[MAX_POINTERS], any = 0;
  for (int i = 0; i < self->n_pointers; i++) {
    pointers[i] = PyLong_AsUnsignedLongLong(args[1 + i]);
    if (pointers[i] == (uint64_t)-1 && PyErr_Occurred())
      return NULL;
    any |= pointers[i];
  }
  if (any & 15)
    Py_RETURN_FALSE;
  if (launch_ex == NULL && !find_launch())
    return NULL;
  uint64_t stream = PyLong_AsUnsignedLongLong(args[0]);
  if (stream == (uint64_t)-1 && PyErr_Occurred())
    return NULL;
  /* Copies on the stack: the Starter itself is never written after make(). */
  _Alignas(8) unsigned char values[MAX_BYTES];
  void *params[MAX_PARAMS];
  memcpy(values, self->values, self->n_bytes);
  for (int i = 0; i < self->n_pointers; i++)
    memcpy(values + self->pointer_at[i], &pointers[i], sizeof(uint64_t));
  for (int i = 0; i < self->n_params; i++)
    params[i] = values + self->param_at[i];
  CUlaunchConfig config = self->config;
  config.hStream = (CUstream)(uintptr_t)stream;
  config.attrs = self->attrs;
  CUresult result = launch_ex(&config, self->function, params, NULL);
  if (result == CUDA_ERROR_INVALID_CONTEXT)
    Py_RETURN_FALSE;
  if (result != CUDA_SUCCESS) {
    PyErr_Format(PyExc_RuntimeError, "cuLaunchKernelEx failed (CUresult %d)", (int)result);
    return NULL;
  }
  Py_RETURN_TRUE;
}

static PyTypeObject StarterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npu_softmax_cuda_start.Starter",
    .tp_basicsize = sizeof(Starter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Starter, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_doc = "starter(stream, *pointers) -> bool: start the kernel (see make).",
};

static int size_list(PyObject *tuple, size_t *out, int most, const char *what) {
  Py_ssize_t n = PyTuple_Size(tuple);
  if (n < 0)
    return -1;
  if (n > most) {
    PyErr_Format(PyExc_ValueError, "more than %d %s", most, what);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    out[i] = PyLong_AsSize_t(PyTuple_GET_ITEM(tuple, i));
    if (out[i] == (size_t)-1 && PyErr_Occurred())
      return -1;
  }
  return (int)n;
}

/* make(function, grid, block, shared, pdl, cooperative, values, param_at, pointer_at):
 * a Starter of the kernel `function` (a CUfunction handle) on `grid` programs of `block`
 * threads with `shared` bytes of dynamic shared memory, as a programmatic dependent launch
 * where `pdl` and a cooperative one where `cooperative`. `values` holds the parameters packed,
 * parameter i at byte `param_at[i]`; the pointers a call passes go at `pointer_at`. */
static PyObject *make(PyObject *module, PyObject *args) {
  (void)module;
  unsigned long long function;
  unsigned int grid, block, shared;
  int pdl, cooperative;
  Py_buffer values;
  PyObject *param_at, *pointer_at;
  if (!PyArg_ParseTuple(args, "KIIIppy*O!O!", &function, &grid, &block, &shared, &pdl,
                        &cooperative, &values, &PyTuple_Type, &param_at, &PyTuple_Type,
                        &pointer_at))
    return NULL;
  if (values.len > MAX_BYTES) {
    PyBuffer_Release(&values);
    PyErr_Format(PyExc_ValueError, "more than %d bytes of parameters", MAX_BYTES);
    return NULL;
  }
  Starter *self = PyObject_New(Starter, &StarterType);
  if (self == NULL) {
    PyBuffer_Release(&values);
    return NULL;
  }
  self->vectorcall = starter_call;
  self->function = (CUfunction)(uintptr_t)function;
  memset(&self->config, 0, sizeof(self->config));
  memset(self->attrs, 0, sizeof(self->attrs));
  self->config.gridDimX = grid;
  self->config.gridDimY = self->config.gridDimZ = 1;
  self->config.blockDimX = block;
  self->config.blockDimY = self->config.blockDimZ = 1;
  self->config.sharedMemBytes = shared;
  unsigned int n_attrs = 0;
  if (pdl) {
    self->attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    self->attrs[n_attrs++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (cooperative) {
    self->attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    self->attrs[n_attrs++].value.cooperative = 1;
  }
  self->config.numAttrs = n_attrs;
  self->n_bytes = (size_t)values.len;
  memcpy(self->values, values.buf, self->n_bytes);
  PyBuffer_Release(&values);
  self->n_params = size_list(param_at, self->param_at, MAX_PARAMS, "parameters");
  self->n_pointers = self->n_params < 0 ? -1
                     : size_list(pointer_at, self->pointer_at, MAX_POINTERS, "pointers");
  if (self->n_pointers < 0) {
    Py_DECREF(self);
    return NULL;
  }
  for (int i = 0; i < self->n_params; i++)
    if (self->param_at[i] >= self->n_bytes) {
      Py_DECREF(self);
      PyErr_SetString(PyExc_ValueError, "a parameter lies past the packed values");
      return NULL;
    }
  for (int i = 0; i < self->n_pointers; i++)
    if (self->pointer_at[i] + sizeof(uint64_t) > self->n_bytes) {
      Py_DECREF(self);
      PyErr_SetString(PyExc_ValueError, "a pointer lies past the packed values");
      return NULL;
    }
  return (PyObject *)self;
}

static PyMethodDef methods[] = {
    {"make", make, METH_VARARGS, "make(...) -> Starter (see the source)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "npu_softmax_cuda_start",
                                        "Direct CUDA starts of compiled Triton kernels.", -1,
                                        methods};

PyMODINIT_FUNC PyInit_npu_softmax_cuda_start(void) {
  if (PyType_Ready(&StarterType) < 0)
    return NULL;
  return PyModule_Create(&module_def);
}
