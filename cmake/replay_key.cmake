# replay_key.cmake — the database cache key: a hash of every source file linked into the code
# that builds a database (input/, the replay, the codec, the allocator model, common/, and the
# categories a build keeps), so a stale cached database is never reused and nobody has to
# remember to bump a version string. analyzer/input/input.c hashes the key into each cache file's
# name and writes it to the database's meta table (analyzer_version).
#
# Two uses:
#   include(replay_key.cmake)          defines gmt_replay_key(OUTPUT <header> TARGETS <target>...):
#                                      the files of those targets and of every target they link,
#                                      written to <header's folder>/replay_key_files.txt (relative
#                                      to the source tree), and the rule that makes <header> from
#                                      them (remade when one of them changes)
#   cmake -DROOT=SRC -DFILES=LIST [-DOUT=FILE] [-DLIST=ON] -P replay_key.cmake
#                                      hashes the files LIST names, relative to SRC, and writes
#                                      FILE, a header with
#                                        #define GMT_REPLAY_KEY "replay-<16 hex digits>"
#                                      (without OUT: prints the key on stdout; LIST=ON: the files)
#
# The files come from the build, not from a hand list: for each target (followed through
# LINK_LIBRARIES, imported ones left out) its SOURCES, exactly; a generated source stands for the
# files its source property GMT_KEY_INPUTS names (schema_sql.c: schema.sql, embed_text.cmake). For
# the headers, every *.h in the folder of each of those sources and in each in-tree include
# directory of those targets: the compiler can reach an in-tree header only there (a quoted
# include looks next to the including file first, then in the include directories), so none is
# missed; a header no source includes costs a needless rebuild of the cache, never a stale
# database. tests/test_replay_key.sh holds the list to the compiler's and the linker's truth.
#
# The key is the SHA-256 of "relative-path SHA-256-of-content" lines, one per file, sorted by
# path: it depends on the files' text only, not on where the tree lies, so two checkouts of one
# commit share their cache. A comment change in a hashed file changes it too (a rebuild of the
# database, never a stale one).

# Link items that are not targets and may stay so (system libraries by name).
set(GMT_REPLAY_KEY_SYSTEM_LIBS m dl rt pthread)

# The path `p` (absolute) relative to the source tree, in `out`; a fatal error outside it.
function(_gmt_replay_key_rel p what out)
  cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${p}" NORMALIZE inside)
  if(NOT inside)
    message(FATAL_ERROR "replay_key: ${what} ${p} is outside the source tree")
  endif()
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${p}")
  set(${out} "${rel}" PARENT_SCOPE)
endfunction()

function(gmt_replay_key)
  cmake_parse_arguments(PARSE_ARGV 0 K "" "OUTPUT" "TARGETS")
  if(NOT K_OUTPUT OR NOT K_TARGETS)
    message(FATAL_ERROR "gmt_replay_key(OUTPUT <header> TARGETS <target>...)")
  endif()
  cmake_path(NORMAL_PATH K_OUTPUT)
  cmake_path(GET K_OUTPUT PARENT_PATH out_dir)
  set(list_file "${out_dir}/replay_key_files.txt")

  # The targets, and every target they link.
  set(targets "")
  set(todo ${K_TARGETS})
  while(todo)
    list(POP_FRONT todo t)
    if(t MATCHES "^\\$<LINK_ONLY:(.*)>$")
      set(t "${CMAKE_MATCH_1}")
    endif()
    if(t MATCHES "\\$<")
      message(FATAL_ERROR "replay_key: cannot follow the link item ${t}")
    endif()
    if(NOT TARGET "${t}")
      if(t MATCHES "^[A-Za-z_][A-Za-z0-9_]*$" AND NOT t IN_LIST GMT_REPLAY_KEY_SYSTEM_LIBS)
        message(FATAL_ERROR "replay_key: '${t}' is linked but not (yet) a target: define it "
                            "before the call, or name it in GMT_REPLAY_KEY_SYSTEM_LIBS")
      endif()
      continue() # a system library: a path, -lx, or a name above
    endif()
    get_target_property(aliased "${t}" ALIASED_TARGET)
    if(aliased)
      set(t "${aliased}")
    endif()
    get_target_property(imported "${t}" IMPORTED)
    if(imported OR t IN_LIST targets)
      continue()
    endif()
    list(APPEND targets "${t}")
    get_target_property(type "${t}" TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links "${t}" LINK_LIBRARIES)
    endif()
    get_target_property(ilinks "${t}" INTERFACE_LINK_LIBRARIES)
    foreach(l IN LISTS links ilinks)
      if(l)
        list(APPEND todo "${l}")
      endif()
    endforeach()
  endwhile()

  # Their sources, exactly; the header folders.
  set(files "")
  set(dirs "")
  foreach(t IN LISTS targets)
    get_target_property(sdir "${t}" SOURCE_DIR)
    get_target_property(srcs "${t}" SOURCES)
    foreach(s IN LISTS srcs)
      if(s MATCHES "\\$<")
        message(FATAL_ERROR "replay_key: cannot follow the source ${s} of ${t}")
      endif()
      cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY "${sdir}" NORMALIZE OUTPUT_VARIABLE p)
      cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${p}" NORMALIZE generated)
      if(generated)
        if(p STREQUAL K_OUTPUT)
          continue() # the key itself
        endif()
        get_source_file_property(ins "${p}" DIRECTORY "${sdir}" GMT_KEY_INPUTS)
        if(NOT ins)
          message(FATAL_ERROR "replay_key: ${t}'s generated source ${p} does not say what it is "
                              "made from (its source property GMT_KEY_INPUTS)")
        endif()
        foreach(i IN LISTS ins)
          _gmt_replay_key_rel("${i}" "the input of ${p}" rel)
          list(APPEND files "${rel}")
        endforeach()
        continue()
      endif()
      _gmt_replay_key_rel("${p}" "${t}'s source" rel)
      list(APPEND files "${rel}")
      cmake_path(GET p PARENT_PATH d)
      list(APPEND dirs "${d}")
    endforeach()
    foreach(prop INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES)
      get_target_property(incs "${t}" ${prop})
      foreach(d IN LISTS incs)
        if(d MATCHES "\\$<")
          message(FATAL_ERROR "replay_key: cannot follow the include directory ${d} of ${t}")
        endif()
        cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${d}" NORMALIZE generated)
        cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${d}" NORMALIZE inside)
        if(inside AND NOT generated) # the build's own folders hold only the key
          list(APPEND dirs "${d}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES dirs)
  foreach(d IN LISTS dirs)
    file(GLOB hdrs CONFIGURE_DEPENDS "${d}/*.h") # a new header reruns the configuration
    foreach(h IN LISTS hdrs)
      _gmt_replay_key_rel("${h}" "header" rel)
      list(APPEND files "${rel}")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES files)
  list(SORT files)

  # The list, rewritten only when it changes (so an unchanged configuration remakes nothing).
  string(JOIN "\n" text ${files})
  set(old "")
  if(EXISTS "${list_file}")
    file(READ "${list_file}" old)
  endif()
  if(NOT old STREQUAL "${text}\n")
    file(WRITE "${list_file}" "${text}\n")
  endif()
  set(abs ${files})
  list(TRANSFORM abs PREPEND "${PROJECT_SOURCE_DIR}/")
  list(LENGTH files n)
  add_custom_command(
    OUTPUT "${K_OUTPUT}"
    COMMAND "${CMAKE_COMMAND}" "-DROOT=${PROJECT_SOURCE_DIR}" "-DFILES=${list_file}"
            "-DOUT=${K_OUTPUT}" -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    DEPENDS ${abs} "${list_file}" "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    COMMENT "memanalyze: the database cache key (${n} files)")
endfunction()

if(NOT CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

if(NOT ROOT OR NOT FILES)
  message(FATAL_ERROR "replay_key.cmake: -DROOT=<source tree> -DFILES=<list> are required")
endif()
file(STRINGS "${FILES}" files)
if(NOT files)
  message(FATAL_ERROR "replay_key.cmake: ${FILES} names no files")
endif()
if(LIST)
  string(JOIN "\n" text ${files})
  execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${text}")
  return()
endif()

set(lines "")
foreach(f IN LISTS files)
  if(NOT EXISTS "${ROOT}/${f}")
    message(FATAL_ERROR "replay_key.cmake: ${ROOT}/${f} is missing")
  endif()
  file(SHA256 "${ROOT}/${f}" sum)
  string(APPEND lines "${f} ${sum}\n")
endforeach()
string(SHA256 sum "${lines}")
string(SUBSTRING "${sum}" 0 16 sum)
set(key "replay-${sum}")
list(LENGTH files n)

if(NOT OUT)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${key}")
  return()
endif()
file(WRITE "${OUT}"
  "/* generated by cmake/replay_key.cmake from ${n} source files: do not edit */\n"
  "#define GMT_REPLAY_KEY \"${key}\"\n")
