package org.libconv;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * The Java API covers conv.h: parses the header (system property libconv.header) and checks
 * that every function is (1) wrapped by SWIG's low level, (2) called by the public classes and
 * (3) named by a @CFunction of a public method or constructor; and that every enum value has
 * its Java constant. A function or enum value added to conv.h fails here until the Java layer
 * exposes it.
 */
public class ApiCoverageTest {
    /** conv.h with comments removed. */
    private static String header() throws IOException {
        String path = System.getProperty("libconv.header");
        Path file = path != null ? Paths.get(path) : null;
        if (file == null) {
            // Run by hand from somewhere in the source tree.
            for (Path dir = Paths.get("").toAbsolutePath(); dir != null && file == null; dir = dir.getParent())
                if (Files.exists(dir.resolve("include/conv.h"))) file = dir.resolve("include/conv.h");
        }
        assertNotNull("set -Dlibconv.header=<path of conv.h>", file);
        String text = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
        return text.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\n]*", " ");
    }

    private static List<String> headerFunctions() throws IOException {
        List<String> functions = new ArrayList<>();
        Matcher m = Pattern.compile("(?m)^\\s*CONV_API\\s+[^;{}#]*?\\b(conv_\\w+)\\s*\\(").matcher(header());
        while (m.find()) functions.add(m.group(1));
        assertTrue("parsed conv.h: " + functions, functions.size() > 40 && functions.contains("conv_forward"));
        return functions;
    }

    /** The C enums: tag name (conv_dtype) -> constant -> value. */
    private static Map<String, Map<String, Long>> headerEnums() throws IOException {
        Map<String, Map<String, Long>> enums = new LinkedHashMap<>();
        Matcher m = Pattern.compile("typedef\\s+(?:enum\\s+(conv_\\w+)|CONV_ENUM\\s*\\(\\s*(conv_\\w+)\\s*\\))\\s*\\{([^}]*)\\}")
                .matcher(header());
        while (m.find()) {
            String tag = m.group(1) != null ? m.group(1) : m.group(2);
            Map<String, Long> values = new LinkedHashMap<>();
            for (String item : m.group(3).split(",")) {
                String[] kv = item.trim().split("\\s*=\\s*");
                if (kv[0].isEmpty()) continue;
                assertEquals("explicit value for " + kv[0], 2, kv.length);
                values.put(kv[0], Long.decode(kv[1].trim()));
            }
            enums.put(tag, values);
        }
        assertTrue("parsed the enums of conv.h: " + enums.keySet(), enums.containsKey("conv_status"));
        return enums;
    }

    /** The classes of the package, from the jar that holds ConvNative. */
    private static List<Class<?>> packageClasses() throws IOException, URISyntaxException, ClassNotFoundException {
        Path jar = Paths.get(ConvNative.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<Class<?>> classes = new ArrayList<>();
        if (Files.isDirectory(jar)) {
            try (java.util.stream.Stream<Path> files = Files.list(jar.resolve("org/libconv"))) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    String name = f.getFileName().toString();
                    if (name.endsWith(".class")) classes.add(Class.forName("org.libconv." + name.replace(".class", "")));
                }
            }
            return classes;
        }
        try (JarFile file = new JarFile(jar.toFile())) {
            for (Enumeration<JarEntry> e = file.entries(); e.hasMoreElements(); ) {
                String name = e.nextElement().getName();
                if (name.matches("org/libconv/[^/]+\\.class"))
                    classes.add(Class.forName(name.replace('/', '.').replace(".class", "")));
            }
        }
        return classes;
    }

    private static boolean isLowLevel(Class<?> c) {
        return c.getSimpleName().startsWith("ConvNative") || c.getSimpleName().matches("conv_\\w+_t");
    }

    /** The ConvNative methods a class calls, read from its constant pool (JVMS 4.4). */
    private static TreeSet<String> nativeCalls(Class<?> c) throws IOException {
        TreeSet<String> calls = new TreeSet<>();
        String resource = "/" + c.getName().replace('.', '/') + ".class";
        byte[] bytes;
        try (InputStream in = c.getResourceAsStream(resource)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            bytes = out.toByteArray();
        }
        DataInputStream data = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
        data.readInt(); // magic
        data.readUnsignedShort();
        data.readUnsignedShort();
        int count = data.readUnsignedShort();
        String[] utf8 = new String[count];
        int[] classNames = new int[count];
        int[][] refs = new int[count][];
        int[][] nameAndTypes = new int[count][];
        for (int i = 1; i < count; ++i) {
            int tag = data.readUnsignedByte();
            switch (tag) {
                case 1: utf8[i] = data.readUTF(); break;
                case 7: classNames[i] = data.readUnsignedShort(); break;
                case 8: case 16: case 19: case 20: data.readUnsignedShort(); break;
                case 3: case 4: data.readInt(); break;
                case 5: case 6: data.readLong(); ++i; break;
                case 9: case 10: case 11: refs[i] = new int[] {data.readUnsignedShort(), data.readUnsignedShort()}; break;
                case 12: nameAndTypes[i] = new int[] {data.readUnsignedShort(), data.readUnsignedShort()}; break;
                case 15: data.readUnsignedByte(); data.readUnsignedShort(); break;
                case 17: case 18: data.readUnsignedShort(); data.readUnsignedShort(); break;
                default: throw new IOException("constant pool tag " + tag + " in " + c);
            }
        }
        for (int i = 1; i < count; ++i) {
            if (refs[i] == null) continue;
            String owner = utf8[classNames[refs[i][0]]];
            String name = utf8[nameAndTypes[refs[i][1]][0]];
            if ("org/libconv/ConvNative".equals(owner)) calls.add(name);
        }
        return calls;
    }

    @Test
    public void everyFunctionIsWrappedByTheLowLevel() throws IOException {
        TreeSet<String> missing = new TreeSet<>();
        for (String f : headerFunctions()) {
            boolean found = false;
            for (Method m : ConvNative.class.getDeclaredMethods())
                found |= m.getName().equals(f) && Modifier.isStatic(m.getModifiers());
            if (!found) missing.add(f);
        }
        assertTrue("SWIG did not wrap " + missing + ": rebuild, or see bindings/java/conv_java.i", missing.isEmpty());
    }

    @Test
    public void everyFunctionIsReachableFromThePublicApi() throws Exception {
        TreeSet<String> called = new TreeSet<>();
        TreeSet<String> annotated = new TreeSet<>();
        for (Class<?> c : packageClasses()) {
            if (isLowLevel(c)) continue;
            called.addAll(nativeCalls(c));
            if (!Modifier.isPublic(c.getModifiers())) continue;
            List<Executable> members = new ArrayList<>();
            for (Method m : c.getDeclaredMethods()) members.add(m);
            for (Constructor<?> k : c.getDeclaredConstructors()) members.add(k);
            for (Executable e : members) {
                CFunction cf = e.getAnnotation(CFunction.class);
                if (cf == null) continue;
                assertTrue(e + " is annotated but not public", Modifier.isPublic(e.getModifiers()));
                for (String f : cf.value()) annotated.add(f);
            }
        }
        List<String> functions = headerFunctions();
        TreeSet<String> notCalled = new TreeSet<>(), notExposed = new TreeSet<>();
        for (String f : functions) {
            if (!called.contains(f)) notCalled.add(f);
            if (!annotated.contains(f)) notExposed.add(f);
        }
        assertTrue("conv.h functions no public class calls: " + notCalled
                + " (add a method to the org.libconv class they belong to)", notCalled.isEmpty());
        assertTrue("conv.h functions no public method names in @CFunction: " + notExposed, notExposed.isEmpty());
        TreeSet<String> stale = new TreeSet<>(annotated);
        stale.removeAll(functions);
        assertTrue("@CFunction names that are not in conv.h: " + stale, stale.isEmpty());
    }

    /** The Java enum of each C enum, and the prefix of its constants. */
    private static Object[] javaEnum(String tag) {
        String prefix = tag.toUpperCase(java.util.Locale.ROOT) + "_";
        switch (tag) {
            case "conv_status": return new Object[] {Status.class, prefix};
            case "conv_device": return new Object[] {Device.class, prefix};
            case "conv_dtype": return new Object[] {DType.class, prefix};
            case "conv_layout": return new Object[] {Layout.class, prefix};
            case "conv_auto_pad": return new Object[] {AutoPad.class, prefix};
            case "conv_activation": return new Object[] {Activation.class, prefix};
            case "conv_mode": return new Object[] {Mode.class, prefix};
            case "conv_op": return new Object[] {Op.class, prefix};
            case "conv_algo": return new Object[] {Algorithm.class, prefix};
            case "conv_math": return new Object[] {MathMode.class, prefix};
            case "conv_comm_backend": return new Object[] {CommBackend.class, prefix};
            case "conv_reduce_op": return new Object[] {ReduceOp.class, "CONV_REDUCE_"};
            case "conv_comm_state": return new Object[] {CommState.class, prefix};
            default: return null;
        }
    }

    @Test
    public void everyEnumValueHasAJavaConstant() throws Exception {
        for (Map.Entry<String, Map<String, Long>> e : headerEnums().entrySet()) {
            Object[] mapping = javaEnum(e.getKey());
            assertNotNull("no Java enum for " + e.getKey() + "_t: add one and map it in this test", mapping);
            Class<?> type = (Class<?>) mapping[0];
            String prefix = (String) mapping[1];
            int expected = 0;
            for (Map.Entry<String, Long> v : e.getValue().entrySet()) {
                if (v.getKey().endsWith("_MAX_ENUM_")) continue; // a width sentinel, never valid
                assertTrue(v.getKey() + " starts with " + prefix, v.getKey().startsWith(prefix));
                String name = v.getKey().substring(prefix.length());
                Object constant;
                try {
                    constant = type.getField(name).get(null);
                } catch (NoSuchFieldException missing) {
                    fail(v.getKey() + " has no constant " + type.getSimpleName() + "." + name);
                    return;
                }
                assertEquals(v.getKey(), (long) v.getValue(), (long) (int) type.getMethod("value").invoke(constant));
                ++expected;
            }
            assertEquals("constants of " + type.getSimpleName(), expected, type.getEnumConstants().length);
        }
    }

    @Test
    public void versionsAgree() {
        assertEquals(LibConv.HEADER_VERSION, LibConv.version());
        assertEquals(LibConv.HEADER_VERSION_MAJOR + "." + LibConv.HEADER_VERSION_MINOR + "."
                + LibConv.HEADER_VERSION_PATCH, LibConv.versionString());
        assertEquals("", LibConv.lastError());
        assertEquals("im2col_gemm", Algorithm.IM2COL_GEMM.libraryName());
        assertEquals("invalid argument", Status.INVALID_ARGUMENT.description());
        assertEquals(3, LibConv.FIND_REPEATS);
    }

    /** Run from the jar with nothing on java.library.path, the library came out of the jar. */
    @Test
    public void theJarLoadedItsOwnNativeLibrary() {
        String source = LibConv.nativeLibrarySource();
        assertNotNull(source);
        if (System.getProperty("org.libconv.jni.library") == null
                && System.mapLibraryName(NativeLoader.JNI_LIBRARY) != null
                && !onLibraryPath())
            assertTrue(source, source.startsWith("extracted from"));
        assertFalse(NativeLoader.platform().contains("unknown"));
    }

    private static boolean onLibraryPath() {
        for (String dir : System.getProperty("java.library.path", "").split(java.io.File.pathSeparator))
            if (!dir.isEmpty() && Files.exists(Paths.get(dir, System.mapLibraryName(NativeLoader.JNI_LIBRARY))))
                return true;
        return false;
    }

    /** Algorithm search and the tuning file round trip. */
    @Test
    public void findAlgorithmsAndTuningFiles() throws IOException {
        Path dir = Files.createTempDirectory("libconv-tuning");
        Path file = dir.resolve("tuning.txt");
        try (Context ctx = Context.cpu();
             Conv conv = new Conv(2).setPadding(1, 1);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 12, 12);
             Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 4, 4, 3, 3);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 12, 12)) {
            List<AlgorithmTiming> found = conv.findAlgorithms(ctx, Op.FORWARD, x, w, y, null);
            assertFalse(found.isEmpty());
            for (int i = 1; i < found.size(); ++i)
                assertTrue("sorted", found.get(i - 1).milliseconds() <= found.get(i).milliseconds());
            // Every result has a name; those without a constant (private solvers) a null one.
            for (AlgorithmTiming t : found) {
                Algorithm a = t.algorithm();
                assertEquals(t.toString(), a == null ? t.solverName() : a.libraryName(), t.solverName());
                assertEquals(t.toString(), a == null ? t.algorithmId() : a.value(), t.algorithmId());
            }
            assertEquals(found.get(0).algorithm(), conv.chosenAlgorithm(ctx, Op.FORWARD, x, w, y));
            assertEquals(found.get(0).solverName(), conv.chosenSolverName(ctx, Op.FORWARD, x, w, y));
            ctx.saveTuning(file);
            assertTrue(Files.size(file) > 0);
            ctx.clearTuning();
            ctx.loadTuning(file);
            assertEquals(found.get(0).algorithm(), conv.chosenAlgorithm(ctx, Op.FORWARD, x, w, y));
            assertEquals(Device.CPU, ctx.device());
            assertEquals(0, ctx.deviceIndex());
            ctx.setThreads(1);
            assertEquals(1, ctx.threads());
            for (MathMode m : MathMode.values()) assertEquals(m, ctx.setMath(m).math());
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(dir);
        }
    }
}
