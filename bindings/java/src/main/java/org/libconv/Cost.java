package org.libconv;

/** The cost of one pass of a problem, from {@link Conv#cost}. */
public final class Cost {
    private final double flops;
    private final double bytes;

    Cost(double flops, double bytes) {
        this.flops = flops;
        this.bytes = bytes;
    }

    /**
     * Floating-point operations, a multiply-add counted as 2.
     *
     * @return the count
     */
    public double flops() {
        return flops;
    }

    /**
     * The minimum memory traffic: each tensor the pass reads or writes, once.
     *
     * @return bytes
     */
    public double bytes() {
        return bytes;
    }

    @Override
    public String toString() {
        return "Cost(flops=" + flops + ", bytes=" + bytes + ")";
    }
}
