package org.libconv;

/** One result of {@link Conv#findAlgorithms}: an algorithm and how it did. */
public final class AlgorithmTiming {
    private final int algorithmId;
    private final String solverName;
    private final double milliseconds;
    private final long workspaceBytes;

    AlgorithmTiming(int algorithmId, String solverName, double milliseconds, long workspaceBytes) {
        this.algorithmId = algorithmId;
        this.solverName = solverName;
        this.milliseconds = milliseconds;
        this.workspaceBytes = workspaceBytes;
    }

    /**
     * The algorithm.
     *
     * @return the constant, or null for a solver that has no constant in this version of the
     *     Java API (its name: {@link #solverName()})
     */
    public Algorithm algorithm() {
        return Algorithm.find(algorithmId);
    }

    /**
     * The solver's id: an {@link Algorithm} value, or the id of a solver that has no constant.
     *
     * @return the {@code conv_algo_t} value
     */
    public int algorithmId() {
        return algorithmId;
    }

    /**
     * The solver's name, as the verbose trace prints it ({@code "implicit_gemm"}).
     *
     * @return the name
     */
    public String solverName() {
        return solverName;
    }

    /**
     * Its median time over {@link LibConv#FIND_REPEATS} runs.
     *
     * @return milliseconds
     */
    public double milliseconds() {
        return milliseconds;
    }

    /**
     * The workspace it needs.
     *
     * @return bytes
     */
    public long workspaceBytes() {
        return workspaceBytes;
    }

    @Override
    public String toString() {
        return solverName + ": " + milliseconds + " ms, workspace " + workspaceBytes + " bytes";
    }
}
