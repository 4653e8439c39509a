# Build steps of the Java binding, run as `cmake -DMODE=<mode> ... -P JavaBuild.cmake`
# from bindings/java/CMakeLists.txt. Lists are passed with "|" between items.
#
#   MODE=fixup    FILE: make SWIG's constants interface package-private (SWIG
#                 has no pragma for its modifiers; the constants stay
#                 reachable through the package's public classes).
#   MODE=javac    JAVAC, OUT, SOURCE_DIRS, [CLASSPATH], [FLAGS], STAMP: compile
#                 every .java under SOURCE_DIRS (the file list of SWIG's output
#                 is only known at build time) into a fresh OUT.
#   MODE=example  JAVA, JAR, SOURCE: copy the jar alone into a fresh directory
#                 under the system's temporary directory and run the example
#                 there with only that jar on the class path.
#   MODE=smoke    JAVA, JAR, NO_GPU_BECAUSE, SOURCE: `java -jar JAR` must say
#                 "CUDA devices: 0 (...NO_GPU_BECAUSE...)", then MODE=example.
#   MODE=maven-install  JAR, POM, VERSION, CLASSIFIER, REPOSITORY, [JAVA,
#                 SOURCE]: lay the jar and its POM out in the local Maven
#                 repository REPOSITORY as org.libconv:libconv:VERSION with
#                 that classifier (Maven's repository layout, what `mvn
#                 install:install-file` writes); with JAVA and SOURCE, then
#                 run the example from the installed jar (MODE=example).
cmake_minimum_required(VERSION 3.25)

function(split var)
  string(REPLACE "|" ";" list "${${var}}")
  set(${var} "${list}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "fixup")
  if(EXISTS "${FILE}")
    file(READ "${FILE}" text)
    string(REPLACE "\npublic interface " "\ninterface " text "${text}")
    file(WRITE "${FILE}" "${text}")
  endif()

elseif(MODE STREQUAL "javac")
  split(SOURCE_DIRS)
  split(CLASSPATH)
  split(FLAGS)
  set(sources "")
  foreach(dir IN LISTS SOURCE_DIRS)
    file(GLOB_RECURSE found "${dir}/*.java")
    list(APPEND sources ${found})
  endforeach()
  list(SORT sources)
  if(NOT sources)
    message(FATAL_ERROR "no Java sources under ${SOURCE_DIRS}")
  endif()
  file(REMOVE_RECURSE "${OUT}")
  file(MAKE_DIRECTORY "${OUT}")
  # An argument file: the command line stays short whatever the number of files.
  set(args "")
  foreach(source IN LISTS sources)
    string(APPEND args "\"${source}\"\n")
  endforeach()
  file(WRITE "${OUT}.sources" "${args}")
  set(cp "")
  if(CLASSPATH)
    if(CMAKE_HOST_WIN32)
      string(REPLACE ";" "\\;" cp "${CLASSPATH}")
    else()
      string(REPLACE ";" ":" cp "${CLASSPATH}")
    endif()
    set(cp -classpath "${cp}")
  endif()
  execute_process(
    COMMAND "${JAVAC}" ${FLAGS} ${cp} -d "${OUT}" "@${OUT}.sources"
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "javac failed (${result})")
  endif()
  file(TOUCH "${STAMP}")

elseif(MODE STREQUAL "example")
  if(DEFINED ENV{TMPDIR} AND IS_DIRECTORY "$ENV{TMPDIR}")
    set(tmp "$ENV{TMPDIR}")
  else()
    set(tmp "/tmp")
  endif()
  string(RANDOM LENGTH 10 suffix)
  set(dir "${tmp}/libconv-java-example-${suffix}")
  file(MAKE_DIRECTORY "${dir}")
  get_filename_component(jar_name "${JAR}" NAME)
  get_filename_component(source_name "${SOURCE}" NAME)
  file(COPY "${JAR}" "${SOURCE}" DESTINATION "${dir}")
  message(STATUS "running ${source_name} in ${dir} with only ${jar_name} on the class path")
  # No LD_LIBRARY_PATH, no java.library.path pointing into the build: the jar
  # must load its own native libraries.
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH --unset=JAVA_TOOL_OPTIONS --unset=CLASSPATH
            "${JAVA}" -cp "${jar_name}" "${source_name}"
    WORKING_DIRECTORY "${dir}"
    RESULT_VARIABLE result)
  file(REMOVE_RECURSE "${dir}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "the example failed (${result})")
  endif()

elseif(MODE STREQUAL "smoke")
  execute_process(COMMAND "${JAVA}" -jar "${JAR}" OUTPUT_VARIABLE out RESULT_VARIABLE result)
  message(STATUS "java -jar ${JAR}:\n${out}")
  string(FIND "${out}" "CUDA devices: 0 (" at)
  string(FIND "${out}" "${NO_GPU_BECAUSE}" why)
  if(NOT result EQUAL 0 OR at LESS 0 OR why LESS at)
    message(FATAL_ERROR "java -jar failed (${result}) or did not say \"CUDA devices: 0\" "
                        "because of ${NO_GPU_BECAUSE}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -DMODE=example "-DJAVA=${JAVA}" "-DJAR=${JAR}"
                          "-DSOURCE=${SOURCE}" -P "${CMAKE_CURRENT_LIST_FILE}"
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "the example failed (${result})")
  endif()

elseif(MODE STREQUAL "maven-install")
  set(dir "${REPOSITORY}/org/libconv/libconv/${VERSION}")
  file(MAKE_DIRECTORY "${dir}")
  file(COPY_FILE "${JAR}" "${dir}/libconv-${VERSION}-${CLASSIFIER}.jar")
  file(COPY_FILE "${POM}" "${dir}/libconv-${VERSION}.pom")
  string(TIMESTAMP now "%Y%m%d%H%M%S" UTC)
  file(WRITE "${REPOSITORY}/org/libconv/libconv/maven-metadata-local.xml"
"<?xml version=\"1.0\" encoding=\"UTF-8\"?>
<metadata>
  <groupId>org.libconv</groupId>
  <artifactId>libconv</artifactId>
  <versioning>
    <release>${VERSION}</release>
    <versions>
      <version>${VERSION}</version>
    </versions>
    <lastUpdated>${now}</lastUpdated>
  </versioning>
</metadata>
")
  message(STATUS "installed org.libconv:libconv:${VERSION}:${CLASSIFIER} into ${REPOSITORY}")
  if(JAVA AND SOURCE)
    execute_process(COMMAND "${CMAKE_COMMAND}" -DMODE=example "-DJAVA=${JAVA}"
                            "-DJAR=${dir}/libconv-${VERSION}-${CLASSIFIER}.jar" "-DSOURCE=${SOURCE}"
                            -P "${CMAKE_CURRENT_LIST_FILE}"
                    RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "the example failed with the installed jar (${result})")
    endif()
  endif()

else()
  message(FATAL_ERROR "JavaBuild.cmake: unknown MODE '${MODE}'")
endif()
