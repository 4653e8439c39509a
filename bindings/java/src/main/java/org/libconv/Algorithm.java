package org.libconv;

/**
 * A convolution algorithm. {@link #AUTO} lets libconv choose per problem; forcing one that does
 * not apply to a problem makes the call fail with {@link UnsupportedException}.
 * The values are those of C's {@code conv_algo_t}. Solvers are also known by name
 * ({@link #fromName}, {@link Conv#setAlgorithm(Op, String)}, {@link Plan#solverName()}), which
 * reaches those that have no constant here.
 */
public enum Algorithm {
    /** Let libconv choose (the default). */
    AUTO(conv_algo_t.CONV_ALGO_AUTO),
    /** Unfold the input (im2col / im2row), one GEMM per group; applies to every problem. */
    IM2COL_GEMM(conv_algo_t.CONV_ALGO_IM2COL_GEMM),
    /** 1x1 kernel, no padding, any stride: one GEMM, no unfolding at stride 1. */
    GEMM_1X1(conv_algo_t.CONV_ALGO_GEMM_1X1),
    /** Depthwise convolutions (groups == C): a direct sum per output, vectorised. */
    DEPTHWISE_DIRECT(conv_algo_t.CONV_ALGO_DEPTHWISE_DIRECT),
    /**
     * Winograd F(4x4, 3x3): 2-D 3x3 kernels, stride 1, no dilation, padding 0..2; all three
     * passes. 4x fewer multiplications, about 10x the rounding error of direct summation
     * (not chosen under {@link MathMode#STRICT}).
     */
    WINOGRAD_4X4_3X3(conv_algo_t.CONV_ALGO_WINOGRAD_4X4_3X3),
    /**
     * 1-D and 2-D convolutions of any kernel, stride, dilation, padding and groups,
     * summed straight from a padded copy of the input (no unfolded matrix); forward,
     * backward-filter, and backward-data at stride 1.
     */
    IMPLICIT_GEMM(conv_algo_t.CONV_ALGO_IMPLICIT_GEMM),
    /**
     * cuDNN: forward IMPLICIT_GEMM, backward-data and backward-filter ALGO_0 (no workspace; the
     * backward ones are non-deterministic). The CUDA engine's algorithms are refused by the CPU
     * and the CPU's by the GPU; docs/gpu.md has the table.
     */
    CUDNN_IMPLICIT_GEMM(conv_algo_t.CONV_ALGO_CUDNN_IMPLICIT_GEMM),
    /** cuDNN: forward IMPLICIT_PRECOMP_GEMM, backward-data and backward-filter ALGO_1. */
    CUDNN_IMPLICIT_PRECOMP_GEMM(conv_algo_t.CONV_ALGO_CUDNN_IMPLICIT_PRECOMP_GEMM),
    /** cuDNN: forward GEMM (explicit im2col), backward-filter ALGO_3 (non-deterministic). */
    CUDNN_GEMM(conv_algo_t.CONV_ALGO_CUDNN_GEMM),
    /** cuDNN: forward DIRECT (implemented by cuDNN for no problem today). */
    CUDNN_DIRECT(conv_algo_t.CONV_ALGO_CUDNN_DIRECT),
    /** cuDNN: FFT for the three passes; an error bound like Winograd's. */
    CUDNN_FFT(conv_algo_t.CONV_ALGO_CUDNN_FFT),
    /** cuDNN: FFT in 32x32 tiles (3-D: forward and backward-data). */
    CUDNN_FFT_TILING(conv_algo_t.CONV_ALGO_CUDNN_FFT_TILING),
    /** cuDNN: fused Winograd (3x3 kernels) for the three passes. */
    CUDNN_WINOGRAD(conv_algo_t.CONV_ALGO_CUDNN_WINOGRAD),
    /** cuDNN: Winograd with separate transform kernels, for the three passes. */
    CUDNN_WINOGRAD_NONFUSED(conv_algo_t.CONV_ALGO_CUDNN_WINOGRAD_NONFUSED);

    private static final Algorithm[] VALUES = values();
    private final int value;

    Algorithm(int value) {
        this.value = value;
    }

    /**
     * The C value ({@code CONV_ALGO_...}).
     *
     * @return the value
     */
    public int value() {
        return value;
    }

    /**
     * The constant with a C value.
     *
     * @param value a C value
     * @return its constant
     * @throws IllegalArgumentException if this version does not know the value
     */
    public static Algorithm fromValue(int value) {
        Algorithm a = find(value);
        if (a == null) throw new IllegalArgumentException("unknown conv_algo_t value " + value);
        return a;
    }

    /** The constant with a C value, or null. */
    static Algorithm find(int value) {
        for (Algorithm v : VALUES)
            if (v.value == value) return v;
        return null;
    }

    /**
     * The constant of a solver name, as {@link #libraryName()} and the verbose trace give it
     * ({@code "winograd_4x4_3x3"}, {@code "auto"}).
     *
     * @param name the name
     * @return its constant
     * @throws InvalidArgumentException for a name libconv does not know (the message lists the
     *     known ones)
     * @throws IllegalArgumentException for a solver that has no constant in this version of the
     *     Java API (force it by name: {@link Conv#setAlgorithm(Op, String)})
     */
    @CFunction("conv_algo_from_name")
    public static Algorithm fromName(String name) {
        int id = idOf(name);
        Algorithm a = find(id);
        if (a == null)
            throw new IllegalArgumentException("solver \"" + name + "\" (id " + id + ") has no Algorithm constant in "
                    + "this version of the Java API: use it by name");
        return a;
    }

    /** The id of a solver name (conv_algo_from_name). */
    static int idOf(String name) {
        if (name == null) throw new NullPointerException("name is null");
        int[] id = new int[1];
        ConvNative.conv_algo_from_name(name, id);
        return id[0];
    }

    /**
     * libconv's name of the algorithm ({@code "im2col_gemm"}).
     *
     * @return the name, {@code "unknown"} for a value the loaded library does not know
     */
    @CFunction("conv_algo_name")
    public String libraryName() {
        return ConvNative.conv_algo_name(value);
    }
}
