/* conv_java.i -- the Java module: SWIG's low level of the org.libconv package.
 *
 * SWIG generates from this file the package-private classes ConvNative (one
 * static method per C function, named exactly like it) and ConvNativeJNI (the
 * native declarations), plus one constants class per C enum. The public API
 * (Context, Tensor, Conv, Workspace, ...) is hand-written on top of them in
 * src/main/java/org/libconv.
 *
 * Every typemap here follows from an argument pattern of conv.h, never from a
 * function name, so a function added to conv.h is wrapped with no change to
 * this file (see the list of patterns in ../swig/conv.i):
 *
 *   C                                  Java (low level)
 *   conv_status_t (returned)           int, always 0: a failure throws the
 *                                      ConvException subclass of the status
 *                                      with conv_last_error()'s message,
 *                                      read inside the same native call
 *   conv_xxx_t handle                  long (the address; 0 for NULL)
 *   function pointer (callback)        long (the address of a native function)
 *   void *user, void *cuda_stream      long (an address libconv never reads)
 *   conv_xxx_t *out, conv_xxx_t *comms long[] (as many as C creates: element 0
 *   void **                            for one)
 *   const int64_t * / int64_t * ...    long[] / int[] / double[]: copied in,
 *   int *, size_t *, double *, enum *  and back out unless const. The native
 *                                      side always provides at least
 *                                      CONV_JAVA_MIN_ELEMS (64) elements, more
 *                                      than any dims or per-axis list, so a
 *                                      short array cannot make C read or
 *                                      write past its end.
 *   enum values                        int (constants: CONV_DTYPE_FLOAT32, ...)
 *   const char * (returned)            String (decoded as UTF-8)
 *   const char * (argument)            String (encoded as UTF-8)
 *   const char **name                  String[]: element 0 receives the
 *                                      library's (static, ASCII) string
 *   void *data, const void *send, ...  Object: a direct java.nio.Buffer (the
 *                                      address of its position()) or a Long
 *                                      holding an address
 *   (void *memory, size_t bytes)       one direct java.nio.Buffer: address of
 *                                      position(), bytes = remaining()
 *   (const void *host, size_t bytes),  one Object, memory used during the
 *   (void *host, size_t bytes),        call only: a direct Buffer (as above)
 *   (const void *id, size_t id_bytes), or a whole primitive array (copied
 *   (void *id, size_t bytes),          through a temporary, and back after
 *   (char *name, size_t capacity)      a successful call)
 */
%module(jniclassname="ConvNativeJNI") ConvNative

/* ------------------------------------------------ package-private classes */

%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) moduleclassmodifiers="final class"
/* Loading the JNI class loads the native library (from the jar if need be). */
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }

  private ConvNativeJNI() {}
%}
%pragma(java) modulecode=%{
  private ConvNative() {}
%}

/* Enums are plain int constants, one final class per C enum. */
%include "enumtypeunsafe.swg"
%javaconst(1);
%typemap(javaclassmodifiers) enum SWIGTYPE "final class"

/* ---------------------------------------------------------- native helpers */

%{
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"

/* Every array handed to C has at least this many elements. */
#define CONV_JAVA_MIN_ELEMS 64

static jclass conv_java_exception_class;  /* org.libconv.ConvException */
static jmethodID conv_java_exception_factory;
static jclass conv_java_buffer_class;     /* java.nio.Buffer */
static jclass conv_java_long_class;       /* java.lang.Long */
static jmethodID conv_java_long_value;
static jmethodID conv_java_buffer_position, conv_java_buffer_limit;
static jclass conv_java_buffer_classes[7];
static const int conv_java_buffer_sizes[7] = {1, 2, 2, 4, 4, 8, 8};
static jclass conv_java_array_classes[8];
static const int conv_java_array_sizes[8] = {1, 2, 2, 4, 4, 8, 8, 1};

static jclass conv_java_global_class(JNIEnv *jenv, const char *name) {
  jclass local = (*jenv)->FindClass(jenv, name);
  jclass global;
  if (!local) return NULL;
  global = (jclass)(*jenv)->NewGlobalRef(jenv, local);
  (*jenv)->DeleteLocalRef(jenv, local);
  return global;
}

/* Looks up, once, the classes and methods the typemaps use. The class loader
 * is the one of the class that called System.load (NativeLoader), which also
 * loaded ConvException. */
SWIGEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  static const char *const buffers[7] = {
      "java/nio/ByteBuffer", "java/nio/ShortBuffer", "java/nio/CharBuffer", "java/nio/IntBuffer",
      "java/nio/FloatBuffer", "java/nio/LongBuffer", "java/nio/DoubleBuffer"};
  static const char *const arrays[8] = {"[B", "[S", "[C", "[I", "[F", "[J", "[D", "[Z"};
  JNIEnv *jenv = NULL;
  int i;
  (void)reserved;
  if ((*vm)->GetEnv(vm, (void **)&jenv, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  conv_java_exception_class = conv_java_global_class(jenv, "org/libconv/ConvException");
  if (!conv_java_exception_class) return JNI_ERR;
  conv_java_exception_factory = (*jenv)->GetStaticMethodID(jenv, conv_java_exception_class,
      "fromNative", "(ILjava/lang/String;[B)Lorg/libconv/ConvException;");
  if (!conv_java_exception_factory) return JNI_ERR;
  conv_java_long_class = conv_java_global_class(jenv, "java/lang/Long");
  if (!conv_java_long_class) return JNI_ERR;
  conv_java_long_value = (*jenv)->GetMethodID(jenv, conv_java_long_class, "longValue", "()J");
  if (!conv_java_long_value) return JNI_ERR;
  conv_java_buffer_class = conv_java_global_class(jenv, "java/nio/Buffer");
  if (!conv_java_buffer_class) return JNI_ERR;
  conv_java_buffer_position = (*jenv)->GetMethodID(jenv, conv_java_buffer_class, "position", "()I");
  conv_java_buffer_limit = (*jenv)->GetMethodID(jenv, conv_java_buffer_class, "limit", "()I");
  if (!conv_java_buffer_position || !conv_java_buffer_limit) return JNI_ERR;
  for (i = 0; i < 7; ++i)
    if (!(conv_java_buffer_classes[i] = conv_java_global_class(jenv, buffers[i]))) return JNI_ERR;
  for (i = 0; i < 8; ++i)
    if (!(conv_java_array_classes[i] = conv_java_global_class(jenv, arrays[i]))) return JNI_ERR;
  return JNI_VERSION_1_8;
}

/* Throws the ConvException subclass of `status`, with conv_last_error() of
 * this thread (read now, before any other libconv call can replace it). The
 * message goes as bytes: it is UTF-8, which NewStringUTF does not take. */
static void conv_java_throw_status(JNIEnv *jenv, int status, const char *function) {
  const char *message = conv_last_error();
  jsize n = (jsize)strlen(message);
  jbyteArray bytes;
  jstring name;
  jobject exception;
  if ((*jenv)->ExceptionCheck(jenv)) return;
  bytes = (*jenv)->NewByteArray(jenv, n);
  if (!bytes) return;
  (*jenv)->SetByteArrayRegion(jenv, bytes, 0, n, (const jbyte *)message);
  name = (*jenv)->NewStringUTF(jenv, function);
  if (!name) return;
  exception = (*jenv)->CallStaticObjectMethod(jenv, conv_java_exception_class,
                     conv_java_exception_factory, (jint)status, name, bytes);
  if (exception && !(*jenv)->ExceptionCheck(jenv)) (*jenv)->Throw(jenv, (jthrowable)exception);
}

/* The memory between position() and limit() of a direct buffer. Returns 0
 * with *data = NULL for a null buffer, -1 with an exception pending for a
 * heap buffer. */
static int conv_java_buffer_memory(JNIEnv *jenv, jobject buffer, void **data, size_t *bytes) {
  char *base;
  jint position, limit;
  int i, size = 0;
  *data = NULL;
  *bytes = 0;
  if (!buffer) return 0;
  for (i = 0; i < 7 && !size; ++i)
    if ((*jenv)->IsInstanceOf(jenv, buffer, conv_java_buffer_classes[i])) size = conv_java_buffer_sizes[i];
  base = (char *)(*jenv)->GetDirectBufferAddress(jenv, buffer);
  if (!size || !base) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException,
        "libconv needs a direct buffer (ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())), not a heap buffer");
    return -1;
  }
  position = (*jenv)->CallIntMethod(jenv, buffer, conv_java_buffer_position);
  if ((*jenv)->ExceptionCheck(jenv)) return -1;
  limit = (*jenv)->CallIntMethod(jenv, buffer, conv_java_buffer_limit);
  if ((*jenv)->ExceptionCheck(jenv)) return -1;
  *data = base + (size_t)position * (size_t)size;
  *bytes = (size_t)(limit - position) * (size_t)size;
  return 0;
}

/* A memory pointer: a direct buffer (its position) or a Long address. */
static int conv_java_pointer(JNIEnv *jenv, jobject object, void **data) {
  size_t bytes;
  jlong address;
  *data = NULL;
  if (!object) return 0;
  if ((*jenv)->IsInstanceOf(jenv, object, conv_java_long_class)) {
    address = (*jenv)->CallLongMethod(jenv, object, conv_java_long_value);
    if ((*jenv)->ExceptionCheck(jenv)) return -1;
    *data = (void *)(intptr_t)address;
    return 0;
  }
  if ((*jenv)->IsInstanceOf(jenv, object, conv_java_buffer_class))
    return conv_java_buffer_memory(jenv, object, data, &bytes);
  SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException,
                          "memory must be a direct buffer or an address");
  return -1;
}

/* Host memory for one call: a direct buffer (its remaining elements, used in
 * place) or a whole primitive array, copied to and from a temporary (no
 * pinning: GetPrimitiveArrayCritical would forbid the JNI calls that other
 * arguments' typemaps make around the call). */
typedef struct {
  jarray array;
  int kind;
  jsize length;
  void *data;
  size_t bytes;
} conv_java_host_t;

static int conv_java_host_acquire(JNIEnv *jenv, jobject object, conv_java_host_t *host) {
  int i;
  host->array = NULL;
  host->data = NULL;
  host->bytes = 0;
  if (!object) return 0;
  if ((*jenv)->IsInstanceOf(jenv, object, conv_java_buffer_class))
    return conv_java_buffer_memory(jenv, object, &host->data, &host->bytes);
  for (i = 0; i < 8; ++i) {
    if ((*jenv)->IsInstanceOf(jenv, object, conv_java_array_classes[i])) {
      jarray array = (jarray)object;
      jsize n = (*jenv)->GetArrayLength(jenv, array);
      size_t bytes = (size_t)n * (size_t)conv_java_array_sizes[i];
      void *data = malloc(bytes ? bytes : 1);
      if (!data) {
        SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out of memory");
        return -1;
      }
      switch (i) {
        case 0: (*jenv)->GetByteArrayRegion(jenv, (jbyteArray)array, 0, n, (jbyte *)data); break;
        case 1: (*jenv)->GetShortArrayRegion(jenv, (jshortArray)array, 0, n, (jshort *)data); break;
        case 2: (*jenv)->GetCharArrayRegion(jenv, (jcharArray)array, 0, n, (jchar *)data); break;
        case 3: (*jenv)->GetIntArrayRegion(jenv, (jintArray)array, 0, n, (jint *)data); break;
        case 4: (*jenv)->GetFloatArrayRegion(jenv, (jfloatArray)array, 0, n, (jfloat *)data); break;
        case 5: (*jenv)->GetLongArrayRegion(jenv, (jlongArray)array, 0, n, (jlong *)data); break;
        case 6: (*jenv)->GetDoubleArrayRegion(jenv, (jdoubleArray)array, 0, n, (jdouble *)data); break;
        default: (*jenv)->GetBooleanArrayRegion(jenv, (jbooleanArray)array, 0, n, (jboolean *)data); break;
      }
      host->array = array;
      host->kind = i;
      host->length = n;
      host->data = data;
      host->bytes = bytes;
      return 0;
    }
  }
  SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException,
                          "host memory must be a direct buffer or a primitive array");
  return -1;
}

/* Copies a temporary back into its array (after a successful call only: a
 * failed call changes nothing). */
static void conv_java_host_write_back(JNIEnv *jenv, conv_java_host_t *host) {
  jarray array = host->array;
  jsize n = host->length;
  void *data = host->data;
  if (!array) return;
  switch (host->kind) {
    case 0: (*jenv)->SetByteArrayRegion(jenv, (jbyteArray)array, 0, n, (const jbyte *)data); break;
    case 1: (*jenv)->SetShortArrayRegion(jenv, (jshortArray)array, 0, n, (const jshort *)data); break;
    case 2: (*jenv)->SetCharArrayRegion(jenv, (jcharArray)array, 0, n, (const jchar *)data); break;
    case 3: (*jenv)->SetIntArrayRegion(jenv, (jintArray)array, 0, n, (const jint *)data); break;
    case 4: (*jenv)->SetFloatArrayRegion(jenv, (jfloatArray)array, 0, n, (const jfloat *)data); break;
    case 5: (*jenv)->SetLongArrayRegion(jenv, (jlongArray)array, 0, n, (const jlong *)data); break;
    case 6: (*jenv)->SetDoubleArrayRegion(jenv, (jdoubleArray)array, 0, n, (const jdouble *)data); break;
    default: (*jenv)->SetBooleanArrayRegion(jenv, (jbooleanArray)array, 0, n, (const jboolean *)data); break;
  }
}

static void conv_java_host_release(conv_java_host_t *host) {
  if (host->array) free(host->data);
  host->array = NULL;
}

/* A Java array as C memory of at least CONV_JAVA_MIN_ELEMS elements. */
static void *conv_java_array_alloc(JNIEnv *jenv, jarray array, size_t element, jsize *length) {
  size_t n;
  void *p;
  *length = (*jenv)->GetArrayLength(jenv, array);
  n = *length < CONV_JAVA_MIN_ELEMS ? CONV_JAVA_MIN_ELEMS : (size_t)*length;
  p = calloc(n, element);
  if (!p) SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out of memory");
  return p;
}
%}

/* -------------------------------------------------------------- statuses */

/* A failed call throws; the check runs after every cleanup, as the last
 * thing before returning to Java, on the thread that made the call. */
%typemap(ret) conv_status_t %{
  if ($1 != CONV_STATUS_SUCCESS) conv_java_throw_status(jenv, (int)$1, "$symname");
%}

/* --------------------------------------------------------------- handles */

/* Any other pointer is an opaque handle: a long. */
%typemap(jni) SWIGTYPE * "jlong"
%typemap(jtype) SWIGTYPE * "long"
%typemap(jstype) SWIGTYPE * "long"
%typemap(javain) SWIGTYPE * "$javainput"
%typemap(javaout) SWIGTYPE * { return $jnicall; }
%typemap(in) SWIGTYPE * %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) SWIGTYPE * %{ $result = (jlong)(intptr_t)$1; %}

/* Handle (and void *) out-parameters: long[]. One handle (conv_tensor_t *out)
 * goes to element 0; functions that create several (conv_comm_create_local)
 * fill as many elements as they create. */
%typemap(jni) SWIGTYPE ** "jlongArray"
%typemap(jtype) SWIGTYPE ** "long[]"
%typemap(jstype) SWIGTYPE ** "long[]"
%typemap(javain) SWIGTYPE ** "$javainput"
%typemap(in) SWIGTYPE ** ($*1_ltype *handles = NULL, jsize count = 0) {
  if ($input) {
    handles = ($*1_ltype *)conv_java_array_alloc(jenv, $input, sizeof($*1_ltype), &count);
    if (!handles) return $null;
  }
  $1 = handles;
}
%typemap(argout) SWIGTYPE ** {
  if ($input) {
    jsize i;
    jlong *elems = JCALL2(GetLongArrayElements, jenv, $input, NULL);
    if (elems) {
      for (i = 0; i < count$argnum; ++i) elems[i] = (jlong)(intptr_t)handles$argnum[i];
      JCALL3(ReleaseLongArrayElements, jenv, $input, elems, 0);
    }
  }
}
%typemap(freearg) SWIGTYPE ** %{ free(handles$argnum); %}

/* ---------------------------------------------------------- 64-bit scalars */

/* The build runs SWIG with -DSWIGWORDSIZE64 on LP64 systems, so that SWIG's
 * int64_t is `long` as in the C headers (its casts then match the
 * prototypes). SWIG's Java module maps C long to a Java int, though: make
 * every long-sized integer a Java long. */
%apply long long { long, int64_t };
%apply long long { unsigned long, uint64_t, size_t };

/* ------------------------------------------------- scalar and array pointers */

/* CTYPE * (copied in and back) and const CTYPE * (copied in) as JAVA[].
 * (A typemap with local variables is written once per type: SWIG gives the
 * locals to the first type of a list only.) */
%define CONV_JAVA_ARRAY(CTYPE, JNIELEM, JAVA, JNIARRAY, KIND)
%typemap(jni) CTYPE *, const CTYPE * "JNIARRAY"
%typemap(jtype) CTYPE *, const CTYPE * "JAVA[]"
%typemap(jstype) CTYPE *, const CTYPE * "JAVA[]"
%typemap(javain) CTYPE *, const CTYPE * "$javainput"
%typemap(in) CTYPE * ($1_basetype *buf = NULL, jsize len = 0) {
  if ($input) {
    jsize i;
    JNIELEM *elems;
    buf = ($1_basetype *)conv_java_array_alloc(jenv, $input, sizeof($1_basetype), &len);
    if (!buf) return $null;
    elems = JCALL2(Get##KIND##ArrayElements, jenv, $input, NULL);
    if (!elems) { free(buf); return $null; }
    for (i = 0; i < len; ++i) buf[i] = ($1_basetype)elems[i];
    JCALL3(Release##KIND##ArrayElements, jenv, $input, elems, JNI_ABORT);
  }
  $1 = ($1_ltype)buf;
}
%typemap(in) const CTYPE * ($1_basetype *buf = NULL, jsize len = 0) {
  if ($input) {
    jsize i;
    JNIELEM *elems;
    buf = ($1_basetype *)conv_java_array_alloc(jenv, $input, sizeof($1_basetype), &len);
    if (!buf) return $null;
    elems = JCALL2(Get##KIND##ArrayElements, jenv, $input, NULL);
    if (!elems) { free(buf); return $null; }
    for (i = 0; i < len; ++i) buf[i] = ($1_basetype)elems[i];
    JCALL3(Release##KIND##ArrayElements, jenv, $input, elems, JNI_ABORT);
  }
  $1 = ($1_ltype)buf;
}
%typemap(argout) CTYPE * {
  if ($input) {
    jsize i;
    JNIELEM *elems = JCALL2(Get##KIND##ArrayElements, jenv, $input, NULL);
    if (elems) {
      for (i = 0; i < len$argnum; ++i) elems[i] = (JNIELEM)buf$argnum[i];
      JCALL3(Release##KIND##ArrayElements, jenv, $input, elems, 0);
    }
  }
}
%typemap(argout) const CTYPE * ""
%typemap(freearg) CTYPE *, const CTYPE * %{ free(buf$argnum); %}
%enddef

CONV_JAVA_ARRAY(int, jint, int, jintArray, Int)
CONV_JAVA_ARRAY(unsigned int, jint, int, jintArray, Int)
CONV_JAVA_ARRAY(long, jlong, long, jlongArray, Long)
CONV_JAVA_ARRAY(unsigned long, jlong, long, jlongArray, Long)
CONV_JAVA_ARRAY(long long, jlong, long, jlongArray, Long)
CONV_JAVA_ARRAY(unsigned long long, jlong, long, jlongArray, Long)
CONV_JAVA_ARRAY(int64_t, jlong, long, jlongArray, Long)
CONV_JAVA_ARRAY(uint64_t, jlong, long, jlongArray, Long)
CONV_JAVA_ARRAY(int32_t, jint, int, jintArray, Int)
CONV_JAVA_ARRAY(uint32_t, jint, int, jintArray, Int)
CONV_JAVA_ARRAY(size_t, jlong, long, jlongArray, Long)
CONV_JAVA_ARRAY(float, jfloat, float, jfloatArray, Float)
CONV_JAVA_ARRAY(double, jdouble, double, jdoubleArray, Double)
CONV_JAVA_ARRAY(enum SWIGTYPE, jint, int, jintArray, Int)

/* ----------------------------------------------------------------- strings */

/* Returned strings: decoded as UTF-8 in Java (NewStringUTF wants modified
 * UTF-8). String arguments (const char *: a path): encoded as UTF-8 in Java,
 * NUL-terminated here. A non-const char * is memory C writes: see the
 * (char *name, size_t capacity) pair below, else a pointer (Object). */
%typemap(jni) const char * "jbyteArray"
%typemap(jtype) const char * "byte[]"
%typemap(jstype) const char * "String"
%typemap(javaout) const char * {
    byte[] utf8 = $jnicall;
    return utf8 == null ? null : new String(utf8, java.nio.charset.StandardCharsets.UTF_8);
  }
%typemap(out) const char * {
  if ($1) {
    jsize n = (jsize)strlen($1);
    $result = JCALL1(NewByteArray, jenv, n);
    if ($result) JCALL4(SetByteArrayRegion, jenv, $result, 0, n, (const jbyte *)$1);
  }
}
%typemap(javain) const char * "($javainput == null ? null : $javainput.getBytes(java.nio.charset.StandardCharsets.UTF_8))"
%typemap(in) const char * (char *str = NULL) {
  if ($input) {
    jsize n = JCALL1(GetArrayLength, jenv, $input);
    str = (char *)malloc((size_t)n + 1);
    if (!str) {
      SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out of memory");
      return $null;
    }
    JCALL4(GetByteArrayRegion, jenv, $input, 0, n, (jbyte *)str);
    str[n] = 0;
  }
  $1 = ($1_ltype)str;
}
%typemap(freearg) const char * %{ free(str$argnum); %}

/* const char **name: a static string of the library (a solver's name), out
 * through element 0 of a String[]. Such names are ASCII identifiers, which
 * NewStringUTF takes as they are; any other byte becomes '?', so that the
 * string stays valid modified UTF-8 whatever C returns. */
%typemap(jni) const char **name "jobjectArray"
%typemap(jtype) const char **name "String[]"
%typemap(jstype) const char **name "String[]"
%typemap(javain) const char **name "$javainput"
%typemap(in) const char **name (const char *str = NULL) %{ $1 = ($1_ltype)&str; %}
%typemap(freearg) const char **name ""
%typemap(argout) const char **name {
  if ($input && str$argnum && JCALL1(GetArrayLength, jenv, $input) > 0) {
    size_t i, n = strlen(str$argnum);
    char *ascii = (char *)malloc(n + 1);
    jstring text;
    if (!ascii) {
      SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out of memory");
      return $null;
    }
    for (i = 0; i < n; ++i) ascii[i] = (str$argnum[i] & 0x80) ? '?' : str$argnum[i];
    ascii[n] = 0;
    text = JCALL1(NewStringUTF, jenv, ascii);
    free(ascii);
    if (text) JCALL3(SetObjectArrayElement, jenv, $input, 0, text);
  }
}

/* ------------------------------------------------------------- raw memory */

/* Any other memory pointer (a wrapped tensor's data, collective buffers, a
 * reducer's weights): a direct Buffer (the address of its position()) or a
 * java.lang.Long holding an address (memory the public classes hold alive,
 * such as another tensor's data). The public classes check the sizes. */
%typemap(jni) void *, const void *, char * "jobject"
%typemap(jtype) void *, const void *, char * "Object"
%typemap(jstype) void *, const void *, char * "Object"
%typemap(javain) void *, const void *, char * "$javainput"
%typemap(in) void *, const void *, char * {
  void *data;
  if (conv_java_pointer(jenv, $input, &data) != 0) return $null;
  $1 = ($1_ltype)data;
}

/* Opaque pointers libconv never reads: the `user` it hands back to native
 * callbacks (conv_context_set_allocator), a CUDA stream: an address. */
%typemap(jni) void *user, void *cuda_stream "jlong"
%typemap(jtype) void *user, void *cuda_stream "long"
%typemap(jstype) void *user, void *cuda_stream "long"
%typemap(javain) void *user, void *cuda_stream "$javainput"
%typemap(in) void *user, void *cuda_stream %{ $1 = (void *)(intptr_t)$input; %}

/* Memory plus its size: a direct buffer's remaining bytes. */
%typemap(jni) (void *memory, size_t bytes) "jobject"
%typemap(jtype) (void *memory, size_t bytes) "java.nio.Buffer"
%typemap(jstype) (void *memory, size_t bytes) "java.nio.Buffer"
%typemap(javain) (void *memory, size_t bytes) "$javainput"
%typemap(in) (void *memory, size_t bytes) {
  void *data;
  size_t bytes;
  if (conv_java_buffer_memory(jenv, $input, &data, &bytes) != 0) return $null;
  $1 = data;
  $2 = bytes;
}

/* Host memory read or written during the call only: a direct buffer or a
 * primitive array. The pairs are named: a pair the list misses is wrapped as
 * a pointer (above) and a size, which the public class computes. */
%define CONV_JAVA_TRANSIENT(PTR, SIZE)
%typemap(jni) (PTR, SIZE) "jobject"
%typemap(jtype) (PTR, SIZE) "Object"
%typemap(jstype) (PTR, SIZE) "Object"
%typemap(javain) (PTR, SIZE) "$javainput"
%typemap(in) (PTR, SIZE) (conv_java_host_t host) {
  if (conv_java_host_acquire(jenv, $input, &host) != 0) return $null;
  $1 = host.data;
  $2 = host.bytes;
}
%typemap(freearg) (PTR, SIZE) %{
  conv_java_host_release(&host$argnum);
%}
%enddef

/* Memory C writes: copied back into an array after a successful call only
 * (a failed call changes nothing). */
%define CONV_JAVA_TRANSIENT_OUT(PTR, SIZE)
CONV_JAVA_TRANSIENT(PTR, SIZE)
%typemap(argout) (PTR, SIZE) %{
  if (result == CONV_STATUS_SUCCESS) conv_java_host_write_back(jenv, &host$argnum);
%}
%enddef

CONV_JAVA_TRANSIENT(const void *host, size_t bytes)
CONV_JAVA_TRANSIENT_OUT(void *host, size_t bytes)
CONV_JAVA_TRANSIENT(const void *id, size_t id_bytes)
CONV_JAVA_TRANSIENT_OUT(void *id, size_t bytes)
CONV_JAVA_TRANSIENT_OUT(char *name, size_t capacity)

%include "conv.i"
