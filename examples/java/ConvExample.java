// libconv from Java: a small convolution layer, forward and backward.
//
// Run it with the jar alone on the class path (it loads its native library
// itself), from any directory:
//
//     java -cp build/bindings/java/libconv.jar examples/java/ConvExample.java
//
// (Java 11+ runs a single source file directly; with an older launcher,
// javac -cp libconv.jar -d out ConvExample.java && java -cp libconv.jar:out ConvExample.)
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import org.libconv.Activation;
import org.libconv.Context;
import org.libconv.Conv;
import org.libconv.ConvException;
import org.libconv.DType;
import org.libconv.LibConv;
import org.libconv.Layout;
import org.libconv.Op;
import org.libconv.Tensor;

public class ConvExample {
    static FloatBuffer floats(int n) {
        // Direct and in native byte order: libconv uses this memory in place.
        return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer();
    }

    public static void main(String[] args) {
        System.out.println("libconv " + LibConv.versionString() + ", native library "
                + LibConv.nativeLibrarySource());

        long[] xDims = {1, 3, 8, 8};   // N, C, H, W
        long[] wDims = {4, 3, 3, 3};   // K, C, kH, kW
        try (Context ctx = Context.cpu();
             Conv conv = new Conv(2).setPadding(1, 1).setActivation(Activation.RELU)) {
            long[] yDims = conv.outputDims(xDims, wDims);
            System.out.println("x " + Arrays.toString(xDims) + " * w " + Arrays.toString(wDims)
                    + " -> y " + Arrays.toString(yDims));

            // x and y wrap Java buffers without copying; w and the bias are copied in from arrays.
            FloatBuffer xBuf = floats(3 * 8 * 8), yBuf = floats(4 * 8 * 8);
            for (int i = 0; i < xBuf.capacity(); ++i) xBuf.put(i, (i % 7) - 3);
            float[] weights = new float[4 * 3 * 3 * 3];
            for (int i = 0; i < weights.length; ++i) weights[i] = ((i % 5) - 2) * 0.5f;
            try (Tensor x = Tensor.wrap(ctx, xBuf, Layout.CHANNELS_FIRST, xDims);
                 Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, wDims);
                 Tensor b = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 1, 1);
                 Tensor y = Tensor.wrap(ctx, yBuf, Layout.CHANNELS_FIRST, yDims)) {
                w.copyFrom(weights);
                b.copyFrom(new float[] {0.25f, -0.25f, 20f, 0f});

                conv.forward(ctx, x, w, b, y);   // y = relu(conv(x, w) + b), written into yBuf
                System.out.println("forward with " + conv.chosenSolverName(ctx, Op.FORWARD, x, w, y)
                        + ": y[0, 2, 3, 3] = " + yBuf.get(2 * 64 + 3 * 8 + 3));

                // Check one output element by hand.
                double expected = 20.0; // the bias of channel 2
                for (int c = 0; c < 3; ++c)
                    for (int i = 0; i < 3; ++i)
                        for (int j = 0; j < 3; ++j)
                            expected += xBuf.get(c * 64 + (2 + i) * 8 + (2 + j)) * weights[((2 * 3 + c) * 3 + i) * 3 + j];
                expected = Math.max(0, expected);
                if (Math.abs(expected - yBuf.get(2 * 64 + 3 * 8 + 3)) > 1e-4) {
                    System.err.println("wrong result: expected " + expected);
                    System.exit(1);
                }

                // Backward: the gradients for dy = 1 everywhere (before the ReLU, for brevity).
                try (Tensor dy = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, yDims);
                     Tensor dx = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, xDims);
                     Tensor dw = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, wDims);
                     Tensor db = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 1, 1)) {
                    float[] ones = new float[(int) dy.elements()];
                    Arrays.fill(ones, 1f);
                    dy.copyFrom(ones);
                    conv.backwardData(ctx, w, dy, dx);
                    conv.backwardFilter(ctx, x, dy, dw, db);
                    System.out.println("bias gradient " + Arrays.toString(db.toFloatArray()));
                    if (db.toFloatArray()[0] != 64f) {
                        System.err.println("wrong bias gradient");
                        System.exit(1);
                    }
                }
            }

            // Errors are exceptions with libconv's message.
            try (Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 5, 8, 8);
                 Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, wDims);
                 Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 8, 8)) {
                conv.forward(ctx, x, w, null, y);
            } catch (ConvException e) {
                System.out.println("refused as expected: " + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        System.out.println("ok");
    }
}
