# Shared by the interface packages under tools/interfaces: generates and installs one package's
# C and Python bindings with the rosidl toolchain of the ROS 2 PyPI wheels (see
# tools/generate_interfaces.sh). Each package's CMakeLists.txt names its files and dependencies.
cmake_minimum_required(VERSION 3.21)  # DIRECTORY property IMPORTED_TARGETS

macro(orca_nav_generate_interfaces)
  cmake_parse_arguments(_ARG "" "" "DEPENDENCIES" ${ARGN})
  find_package(ament_cmake REQUIRED)
  find_package(rosidl_default_generators REQUIRED)
  foreach(_dep ${_ARG_DEPENDENCIES})
    find_package(${_dep} REQUIRED)
  endforeach()
  # Python reads messages through the C type supports only: the C++ generators are left out
  # (they would double the build time). The C introspection type support stays: Fast DDS
  # registers each type through it (without it creating a publisher fails).
  set(_generators "${AMENT_EXTENSIONS_rosidl_generate_idl_interfaces}")
  list(FILTER _generators EXCLUDE REGEX
    "^rosidl_(generator|typesupport|typesupport_fastrtps|typesupport_introspection)_cpp:")
  set(AMENT_EXTENSIONS_rosidl_generate_idl_interfaces "${_generators}")
  rosidl_generate_interfaces(${PROJECT_NAME} ${_ARG_UNPARSED_ARGUMENTS}
    DEPENDENCIES ${_ARG_DEPENDENCIES})
  # The wheels' exported *__rosidl_generator_py targets carry the include directories of the
  # machine that built them (Python and NumPy headers under /opt/python/...), which do not exist
  # here; rosidl_generator_py adds this machine's own, so those paths are only dropped.
  get_property(_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
  foreach(_target ${_imported})
    if(_target MATCHES "__rosidl_generator_py$")
      set_property(TARGET ${_target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "")
    endif()
  endforeach()
  # One translation unit per library (CMake's unity build): the generated sources are many small
  # files that each parse the same headers, so this halves the compile time of nav2_msgs. The
  # type description sources define the same constants file by file and stay apart.
  foreach(_suffix generator_c generator_py typesupport_c typesupport_fastrtps_c
          typesupport_introspection_c)
    set(_target ${PROJECT_NAME}__rosidl_${_suffix})
    if(TARGET ${_target})
      set_target_properties(${_target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
      get_target_property(_sources ${_target} SOURCES)
      list(FILTER _sources INCLUDE REGEX "__description\\.c$")
      set_source_files_properties(${_sources} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
  ament_package()
endmacro()
