#define STR(x) #x
#pragma unroll
__device__ int g;
extern "C" __global__ void k(const __grid_constant__ kevo_lce_args a)
{
    __half *w = (__half *)a.w_cand; w[0] = 0;
    asm volatile("st.global.u32 [%0], %1;" :: "l"(a.e_user), "r"(1));
    if (__half2float(((__half *)a.out)[0]) > 0) return; printf("x");
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, &a.tm_w_user, c, b);
}
