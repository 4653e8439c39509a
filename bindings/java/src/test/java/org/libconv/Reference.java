package org.libconv;

import java.util.Arrays;

/**
 * A plain-Java reference convolution: direct loops, double accumulation, logical
 * channels-first arrays (N, C, spatial... / K, C/G, kernel...), 1 to 3 spatial dims, groups,
 * strides, dilations, asymmetric and automatic padding, both modes.
 */
final class Reference {
    /** The settings of a problem, as a Conv has them. */
    static final class Geometry {
        int spatial;
        long[] stride, dilation, padBegin, padEnd, outputPadding;
        AutoPad autoPad = AutoPad.NOTSET;
        long groups = 1;
        Mode mode = Mode.CONVOLUTION;
        boolean relu;

        Geometry(int spatial) {
            this.spatial = spatial;
            stride = ones(spatial);
            dilation = ones(spatial);
            padBegin = new long[spatial];
            padEnd = new long[spatial];
            outputPadding = new long[spatial];
        }

        /** Applies the settings to a descriptor. */
        void apply(Conv conv) {
            conv.setStrides(stride).setDilations(dilation).setPadding(padBegin, padEnd).setAutoPad(autoPad)
                    .setGroups(groups).setMode(mode).setOutputPadding(outputPadding)
                    .setActivation(relu ? Activation.RELU : Activation.NONE);
        }

        @Override
        public String toString() {
            return mode + " stride " + Arrays.toString(stride) + " dilation " + Arrays.toString(dilation) + " pad "
                    + Arrays.toString(padBegin) + "/" + Arrays.toString(padEnd) + " " + autoPad + " outpad "
                    + Arrays.toString(outputPadding) + " groups " + groups + (relu ? " relu" : "");
        }
    }

    private static long[] ones(int n) {
        long[] a = new long[n];
        Arrays.fill(a, 1);
        return a;
    }

    static long product(long[] dims) {
        long p = 1;
        for (long d : dims) p *= d;
        return p;
    }

    /** Padding of one axis of a convolution with input size `in` {begin, end}. */
    static long[] padding(Geometry g, int axis, long in, long kernel) {
        long e = (kernel - 1) * g.dilation[axis] + 1;
        long s = g.stride[axis];
        switch (g.autoPad) {
            case VALID:
                return new long[] {0, 0};
            case SAME_UPPER:
            case SAME_LOWER: {
                long total;
                if (g.mode == Mode.CONVOLUTION) {
                    long out = (in + s - 1) / s;
                    total = Math.max(0, (out - 1) * s + e - in);
                } else {
                    long out = in * s;
                    total = Math.max(0, (in - 1) * s + e + g.outputPadding[axis] - out);
                }
                long small = total / 2, big = total - small;
                return g.autoPad == AutoPad.SAME_UPPER ? new long[] {small, big} : new long[] {big, small};
            }
            default:
                return new long[] {g.padBegin[axis], g.padEnd[axis]};
        }
    }

    /** Output dims of the problem (null if some output size would be < 1 or channels do not fit). */
    static long[] outputDims(Geometry g, long[] xd, long[] wd) {
        long[] y = new long[xd.length];
        y[0] = xd[0];
        if (g.mode == Mode.CONVOLUTION) {
            if (wd[1] * g.groups != xd[1] || wd[0] % g.groups != 0) return null;
            y[1] = wd[0];
        } else {
            if (wd[0] != xd[1] || xd[1] % g.groups != 0) return null;
            y[1] = wd[1] * g.groups;
        }
        for (int a = 0; a < g.spatial; ++a) {
            long in = xd[2 + a], k = wd[2 + a];
            long e = (k - 1) * g.dilation[a] + 1;
            long[] p = padding(g, a, in, k);
            long out = g.mode == Mode.CONVOLUTION
                    ? Math.floorDiv(in + p[0] + p[1] - e, g.stride[a]) + 1
                    : (in - 1) * g.stride[a] - p[0] - p[1] + e + g.outputPadding[a];
            if (out < 1) return null;
            y[2 + a] = out;
        }
        return y;
    }

    /** What a pass does with one (input element, filter element, output element) triple. */
    private interface Visit {
        void visit(int xi, int wi, int yi);
    }

    /**
     * Visits every contributing triple of a plain convolution with input dims cx (N, C, in...),
     * filter cw (K, C/G, k...), output cy (N, K, out...) and the padding of the input.
     */
    private static void convolve(Geometry g, long[] cx, long[] cw, long[] cy, long[][] pad, Visit v) {
        int sp = g.spatial;
        long[] in = new long[3], k = new long[3], out = new long[3], s = new long[3], d = new long[3], pb = new long[3];
        for (int a = 0; a < 3; ++a) {
            boolean real = a >= 3 - sp;
            int r = a - (3 - sp);
            in[a] = real ? cx[2 + r] : 1;
            k[a] = real ? cw[2 + r] : 1;
            out[a] = real ? cy[2 + r] : 1;
            s[a] = real ? g.stride[r] : 1;
            d[a] = real ? g.dilation[r] : 1;
            pb[a] = real ? pad[r][0] : 0;
        }
        long n = cx[0], c = cx[1], kk = cw[0], cg = cw[1], kg = kk / g.groups;
        long inSize = in[0] * in[1] * in[2], kSize = k[0] * k[1] * k[2], outSize = out[0] * out[1] * out[2];
        for (long b = 0; b < n; ++b)
            for (long ko = 0; ko < kk; ++ko) {
                long group = ko / kg;
                for (long o0 = 0; o0 < out[0]; ++o0)
                    for (long o1 = 0; o1 < out[1]; ++o1)
                        for (long o2 = 0; o2 < out[2]; ++o2) {
                            int yi = (int) (((b * kk + ko) * outSize) + (o0 * out[1] + o1) * out[2] + o2);
                            for (long ci = 0; ci < cg; ++ci) {
                                long channel = group * cg + ci;
                                for (long k0 = 0; k0 < k[0]; ++k0) {
                                    long i0 = o0 * s[0] - pb[0] + k0 * d[0];
                                    if (i0 < 0 || i0 >= in[0]) continue;
                                    for (long k1 = 0; k1 < k[1]; ++k1) {
                                        long i1 = o1 * s[1] - pb[1] + k1 * d[1];
                                        if (i1 < 0 || i1 >= in[1]) continue;
                                        for (long k2 = 0; k2 < k[2]; ++k2) {
                                            long i2 = o2 * s[2] - pb[2] + k2 * d[2];
                                            if (i2 < 0 || i2 >= in[2]) continue;
                                            int xi = (int) ((b * c + channel) * inSize + (i0 * in[1] + i1) * in[2] + i2);
                                            int wi = (int) ((ko * cg + ci) * kSize + (k0 * k[1] + k1) * k[2] + k2);
                                            v.visit(xi, wi, yi);
                                        }
                                    }
                                }
                            }
                        }
            }
    }

    /** The padding of the plain convolution behind the problem (of its input). */
    private static long[][] convPadding(Geometry g, long[] convInput, long[] wd) {
        long[][] pad = new long[g.spatial][];
        for (int a = 0; a < g.spatial; ++a)
            pad[a] = g.mode == Mode.CONVOLUTION
                    ? padding(g, a, convInput[2 + a], wd[2 + a])
                    : padding(g, a, 0, 0); // set below
        return pad;
    }

    private static long[][] transposedPadding(Geometry g, long[] xd, long[] wd) {
        long[][] pad = new long[g.spatial][];
        for (int a = 0; a < g.spatial; ++a) pad[a] = padding(g, a, xd[2 + a], wd[2 + a]);
        return pad;
    }

    /** y = act(conv(x, w) + b) (b may be null). */
    static double[] forward(Geometry g, double[] x, long[] xd, double[] w, long[] wd, double[] b, long[] yd) {
        double[] y = new double[(int) product(yd)];
        if (g.mode == Mode.CONVOLUTION) {
            long[][] pad = convPadding(g, xd, wd);
            convolve(g, xd, wd, yd, pad, (xi, wi, yi) -> y[yi] += x[xi] * w[wi]);
        } else {
            // The adjoint of the convolution whose input is y and output is x.
            long[][] pad = transposedPadding(g, xd, wd);
            convolve(g, yd, wd, xd, pad, (yi, wi, xi) -> y[yi] += x[xi] * w[wi]);
        }
        long perChannel = product(yd) / Math.max(1, yd[0] * yd[1]);
        for (int i = 0; i < y.length; ++i) {
            int channel = (int) ((i / perChannel) % yd[1]);
            double v = y[i] + (b != null ? b[channel] : 0);
            y[i] = g.relu ? Math.max(0, v) : v;
        }
        return y;
    }

    /** dx for dy (the input's dims xd). */
    static double[] backwardData(Geometry g, double[] w, long[] wd, double[] dy, long[] yd, long[] xd) {
        double[] dx = new double[(int) product(xd)];
        if (g.mode == Mode.CONVOLUTION) {
            long[][] pad = convPadding(g, xd, wd);
            convolve(g, xd, wd, yd, pad, (xi, wi, yi) -> dx[xi] += dy[yi] * w[wi]);
        } else {
            long[][] pad = transposedPadding(g, xd, wd);
            convolve(g, yd, wd, xd, pad, (yi, wi, xi) -> dx[xi] += dy[yi] * w[wi]);
        }
        return dx;
    }

    /** dw for x and dy (the filter's dims wd). */
    static double[] backwardFilter(Geometry g, double[] x, long[] xd, double[] dy, long[] yd, long[] wd) {
        double[] dw = new double[(int) product(wd)];
        if (g.mode == Mode.CONVOLUTION) {
            long[][] pad = convPadding(g, xd, wd);
            convolve(g, xd, wd, yd, pad, (xi, wi, yi) -> dw[wi] += dy[yi] * x[xi]);
        } else {
            long[][] pad = transposedPadding(g, xd, wd);
            convolve(g, yd, wd, xd, pad, (yi, wi, xi) -> dw[wi] += dy[yi] * x[xi]);
        }
        return dw;
    }

    /** db: the sums of dy per output channel. */
    static double[] biasGradient(double[] dy, long[] yd) {
        double[] db = new double[(int) yd[1]];
        long perChannel = product(yd) / Math.max(1, yd[0] * yd[1]);
        for (int i = 0; i < dy.length; ++i) db[(int) ((i / perChannel) % yd[1])] += dy[i];
        return db;
    }

    /** Logical channels-first order to the storage order of a layout (dims N, C, spatial...). */
    static double[] toStorage(double[] logical, long[] dims, Layout layout) {
        if (layout == Layout.CHANNELS_FIRST) return logical.clone();
        double[] out = new double[logical.length];
        long n = dims[0], c = dims[1], s = product(dims) / Math.max(1, n * c);
        for (long b = 0; b < n; ++b)
            for (long ch = 0; ch < c; ++ch)
                for (long p = 0; p < s; ++p) out[(int) ((b * s + p) * c + ch)] = logical[(int) ((b * c + ch) * s + p)];
        return out;
    }

    /** The inverse of toStorage. */
    static double[] fromStorage(double[] stored, long[] dims, Layout layout) {
        if (layout == Layout.CHANNELS_FIRST) return stored.clone();
        double[] out = new double[stored.length];
        long n = dims[0], c = dims[1], s = product(dims) / Math.max(1, n * c);
        for (long b = 0; b < n; ++b)
            for (long ch = 0; ch < c; ++ch)
                for (long p = 0; p < s; ++p) out[(int) ((b * c + ch) * s + p)] = stored[(int) ((b * s + p) * c + ch)];
        return out;
    }
}
