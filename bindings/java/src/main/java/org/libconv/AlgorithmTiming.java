package org.libconv;

/** One result of {@link Conv#findAlgorithms}: an algorithm and how it did. */
public final class AlgorithmTiming {
    private final Algorithm algorithm;
    private final double milliseconds;
    private final long workspaceBytes;

    AlgorithmTiming(Algorithm algorithm, double milliseconds, long workspaceBytes) {
        this.algorithm = algorithm;
        this.milliseconds = milliseconds;
        this.workspaceBytes = workspaceBytes;
    }

    /**
     * The algorithm.
     *
     * @return the algorithm
     */
    public Algorithm algorithm() {
        return algorithm;
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
        return algorithm + ": " + milliseconds + " ms, workspace " + workspaceBytes + " bytes";
    }
}
