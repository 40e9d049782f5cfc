# The tools' own logic tested without running a tool (pure C, linked against the core alone).

# halox-md --autotune's decision (tools/autotune_pick.c)
halox_test(test_autotune_pick SOURCES tools/test_autotune_pick.c
           ${PROJECT_SOURCE_DIR}/tools/autotune_pick.c CORE_ONLY LABELS unit)
