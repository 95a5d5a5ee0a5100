// seed_kernels.cu — two trivial entry points, compiled by `make fuzz-corpus` (when nvcc is
// present) into the fatbin seeds of test/fuzz/corpus/fatbin/: SASS + PTX, uncompressed, and
// nvcc's default (compressed) output. Not part of tandem.fatbin.
extern "C" __global__ void tiny_add(float *x, float a) { x[threadIdx.x] += a; }
extern "C" __global__ void tiny_mul(float *x, float a) { x[threadIdx.x] *= a; }
