# Tests of the MD engine (label md): physics against independent references (LAMMPS' published
# values, closed forms, serial runs, statistics), restarts, migration, the command line.
# test_md_shifts: periodic shifts in the CPU lists, few cells per shift dimension, pairs once, vs
# brute force; test_md_checkpoint_forged: checkpoints with matching checksums and bad settings or
# atoms, refused naming the field; test_md_equilibrate: equilibration before step 0,
# water-density's timed steps at its T, restarts do not equilibrate again
foreach(_t lattice nve decomp shifts nvt restart checkpoint_forged migrate overlap equilibrate)
  halox_test(test_md_${_t} SOURCES md/test_md_${_t}.c LABELS md TIMEOUT 300)
endforeach()
# the CPU engine with pairs declared unreachable (HALOX_HYBRID_UNREACHABLE: mailbox path) gives
# the same trajectory bits as with direct stores everywhere
halox_test(test_md_hybrid SOURCES md/test_md_hybrid.c LABELS threads md TIMEOUT 300)
# boxes, coordinates and XYZ files beyond what a precision holds (a search that never ends fails)
halox_test(test_md_ranges SOURCES md/test_md_ranges.c LABELS md TIMEOUT 30)
# files for --read: the frame read, its velocities, LAMMPS dumps, the engine's own
# trajectories read back bit for bit
halox_test(test_md_read SOURCES md/test_md_read.c LABELS md TIMEOUT 60)
# the command line, end to end (runs the tool as a child process)
if(TARGET halox-md)
  halox_test(test_md_cli SOURCES md/test_md_cli.c common/child_run.c common/json_syntax.c
             LABELS md TIMEOUT 300 ARGS $<TARGET_FILE:halox-md>)
  add_dependencies(test_md_cli halox-md)
  # the CPU engine's command line, also on GPU machines (where auto would pick the GPU engine)
  set_tests_properties(test_md_cli PROPERTIES ENVIRONMENT "HALOX_DEVICE=cpu")
  # blown-up states are never written (md/engine/state_check.c): thermo rows, checkpoints (the last
  # good one kept), trajectory frames; a NaN state refused
  halox_test(test_md_blowup SOURCES md/test_md_blowup.c common/child_run.c LABELS md faults
             TIMEOUT 60 ARGS $<TARGET_FILE:halox-md>)
  add_dependencies(test_md_blowup halox-md)
  set_tests_properties(test_md_blowup PROPERTIES ENVIRONMENT "HALOX_DEVICE=cpu")
endif()

# The engine on the `mpi` transport (labels md and mpi): the same trajectory as 1 rank, and the
# same bits as the threads transport on the same grid, for the grids of the issue.
if(HALOX_HAVE_MPI)
  add_executable(test_md_mpi md/test_md_mpi.c)
  target_include_directories(test_md_mpi PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
  target_link_libraries(test_md_mpi PRIVATE halox_md MPI::MPI_C)
  foreach(_grid 2x2x2 3x2x1 4x1x1)
    string(REPLACE "x" ";" _dims ${_grid})
    list(GET _dims 0 _a)
    list(GET _dims 1 _b)
    list(GET _dims 2 _c)
    math(EXPR _np "${_a} * ${_b} * ${_c}")
    halox_mpiexec(_cmd ${_np} $<TARGET_FILE:test_md_mpi>)
    add_test(NAME test_md_mpi_${_grid} COMMAND ${_cmd} ${_grid})
    set_tests_properties(test_md_mpi_${_grid} PROPERTIES LABELS "md;mpi" TIMEOUT 300
                         SKIP_RETURN_CODE 77 PROCESSORS ${_np})
    halox_mpi_leaks_off(test_md_mpi_${_grid})
  endforeach()
  # the tool under mpiexec: 2 processes, a short run, its summary printed by rank 0
  if(TARGET halox-md)
    halox_mpiexec(_md2 2 $<TARGET_FILE:halox-md>)
    add_test(NAME test_md_tool_mpi
             COMMAND ${_md2} --cells 6,6,6 --grid 2x1x1 --transport mpi --steps 40 --thermo-every 20)
    set_tests_properties(test_md_tool_mpi PROPERTIES LABELS "md;mpi" TIMEOUT 120 PROCESSORS 2
                         PASS_REGULAR_EXPRESSION "Summary.*transport mpi")
    halox_mpi_leaks_off(test_md_tool_mpi)
    # --autotune: the first run measures and caches (a fresh cache file), the second reads it
    set(_at_cache ${CMAKE_CURRENT_BINARY_DIR}/autotune-test.tsv)
    add_test(NAME test_md_autotune_reset COMMAND ${CMAKE_COMMAND} -E rm -f ${_at_cache})
    set_tests_properties(test_md_autotune_reset PROPERTIES LABELS "md;mpi" FIXTURES_SETUP md_at)
    foreach(_at measure cached)
      add_test(NAME test_md_autotune_${_at}
               COMMAND ${_md2} --cells 4,4,4 --grid 2x1x1 --device cpu --autotune
                       --autotune-steps 20 --steps 20)
      set_tests_properties(test_md_autotune_${_at} PROPERTIES LABELS "md;mpi" TIMEOUT 120
                           PROCESSORS 2 ENVIRONMENT "HALOX_AUTOTUNE_CACHE=${_at_cache}")
      halox_mpi_leaks_off(test_md_autotune_${_at})
    endforeach()
    set_tests_properties(test_md_autotune_measure PROPERTIES FIXTURES_REQUIRED md_at
                         FIXTURES_SETUP md_at_cached PASS_REGULAR_EXPRESSION
                         "  mpi +[0-9.]+ ms/step \\(median of 3.*autotune: mpi, the fastest measured.*Summary")
    set_tests_properties(test_md_autotune_cached PROPERTIES FIXTURES_REQUIRED md_at_cached
                         PASS_REGULAR_EXPRESSION "autotune: mpi, cached in .*Summary")
    # Launched by mpiexec with P processes: one job of P ranks, never P copies (one
    # Summary), or a refusal before MPI starts (exit 2 from every process, which mpiexec
    # returns). halox_md_launch(NAME NP ENV CHECKS... -- ARGS...): ENV "" or VAR=VALUE.
    function(halox_md_launch name np env)
      halox_mpi_expect(${name} ${np} $<TARGET_FILE:halox-md> LABELS md mpi ENV ${env} ${ARGN})
    endfunction()
    # no --transport, no --grid: mpi on the default grid of P (the CPU engine)
    halox_md_launch(md_launch_default_np2 2 "HALOX_DEVICE=cpu"
                    CHECKS --count 1 "^Summary$" --grep "grid 2x1x1 \\(2 ranks\\), transport mpi,"
                           --grep "transport chosen automatically: mpi: started by an MPI launcher with 2 processes"
                    ARGS --preset lammps-lj --cells 4,4,4 --steps 20)
    halox_md_launch(md_launch_default_np4 4 "HALOX_DEVICE=cpu"
                    CHECKS --count 1 "^Summary$" --grep "ranks 4 \\(grid 2x2x1\\), transport mpi,"
                    ARGS --preset lammps-lj --cells 6,6,6 --steps 20)
    # the GPU example of docs/MD.md, small: GPU engine where a GPU is visible, else mpi
    halox_md_launch(md_launch_gpu_example_np2 2 ""
                    CHECKS --count 1 "^Summary$" --grep "ranks 2 \\(grid 2x1x1\\), transport (mpi|mpi-staged|nccl|nvshmem-[a-z]+),"
                    ARGS --preset water-density --grid 2x1x1 --atoms 2000 --steps 10)
    # threads asked for under P > 1 processes: refused, naming --transport mpi
    halox_md_launch(md_launch_threads_np2 2 "HALOX_DEVICE=cpu"
                    CHECKS --rc 2 --count 0 "^Summary$"
                           --grep "--transport threads runs every rank as a thread of one process, but halox-md was started by an MPI launcher with 2 processes.*Use --transport mpi"
                    ARGS --cells 4,4,4 --steps 20 --transport threads)
    # HALOX_TRANSPORT=auto: the automatic choice, as without it
    halox_md_launch(md_launch_env_auto_np2 2 "HALOX_DEVICE=cpu;HALOX_TRANSPORT=auto"
                    CHECKS --count 1 "^Summary$" --grep "grid 2x1x1 \\(2 ranks\\), transport mpi,"
                           --grep "transport chosen automatically: mpi: started by an MPI launcher"
                    ARGS --cells 4,4,4 --steps 20)
    halox_md_launch(md_launch_threads_env_np4 4 "HALOX_DEVICE=cpu;HALOX_TRANSPORT=threads"
                    CHECKS --rc 2 --count 0 "^Summary$"
                           --grep "HALOX_TRANSPORT=threads runs every rank .* with 4 processes.*Unset HALOX_TRANSPORT or add --transport mpi"
                    ARGS --cells 6,6,6 --steps 20)
    # a grid of another rank count: refused before MPI starts
    halox_md_launch(md_launch_grid_np4 4 "HALOX_DEVICE=cpu"
                    CHECKS --rc 2 --count 0 "^Summary$"
                           --grep "grid 2x1x1 has 2 ranks but 4 MPI processes were started .*: start with mpirun -np 2, or give a --grid of 4 ranks \\(such as 2x2x1\\)"
                    ARGS --cells 6,6,6 --steps 20 --grid 2x1x1)
    # one process started by mpiexec is one process: threads run as without it
    halox_md_launch(md_launch_threads_np1 1 "HALOX_DEVICE=cpu"
                    CHECKS --count 1 "^Summary$" --grep "ranks 2 \\(grid 2x1x1\\), transport threads,"
                    ARGS --cells 4,4,4 --steps 20 --grid 2x1x1)
  endif()
endif()

# halox-md end to end: --help's values, the banner, --transport auto, --quiet, the launcher's
# variables
if(TARGET halox-md)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    # --help states each preset's values and the defaults as runs take them: a check of the
    # text against whole preset runs, which the other md tests run sanitized already
    if(NOT HALOX_SANITIZE)
      add_test(NAME md_help_values COMMAND ${Python3_EXECUTABLE}
                                           ${PROJECT_SOURCE_DIR}/tests/md/md_help.py
                                           $<TARGET_FILE:halox-md>)
      set_tests_properties(md_help_values PROPERTIES LABELS "md" TIMEOUT 120)
    endif()
  endif()
  # the banner says how the tool was built (timings compare only between alike builds)
  add_test(NAME md_banner_build COMMAND $<TARGET_FILE:halox-md> --cells 3,3,3 --steps 0)
  set_tests_properties(md_banner_build PROPERTIES LABELS "md" TIMEOUT 30 ENVIRONMENT "HALOX_DEVICE=cpu"
                       PASS_REGULAR_EXPRESSION "\nbuild: ${HALOX_BUILD_TYPE_NAME} \\(C: [^\n]*\nsystem:")
  # --transport auto: the automatic choice, as without --transport (over HALOX_TRANSPORT here)
  add_test(NAME md_transport_auto
           COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --count 1 "^Summary$"
                   --grep "^run: .*grid 2x1x1 \\(2 ranks\\), transport threads,"
                   -- $<TARGET_FILE:halox-md> --cells 4,4,4 --steps 4 --grid 2x1x1 --transport auto)
  set_tests_properties(md_transport_auto PROPERTIES LABELS "md" TIMEOUT 30
                       ENVIRONMENT "HALOX_DEVICE=cpu;HALOX_TRANSPORT=mpi")
  # --quiet: no thermo table and no progress; the banner and the summary, with the energies of
  # the last thermo record, stay
  add_test(NAME md_quiet_summary
           COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --grep "^halox-md [0-9]"
                   --count 1 "^Summary$" --count 0 "^ +Step +Temp +E_pair"
                   --grep "^  last thermo record: step 10, Temp [0-9.]+, E_pair -[0-9.]+, KE [0-9.]+, TotEng -[0-9.]+, Press"
                   --grep "^  steps 10 \\(0 -> 10\\) in .* ms/step"
                   -- $<TARGET_FILE:halox-md> --cells 4,4,4 --steps 10 --thermo-every 2 --quiet)
  set_tests_properties(md_quiet_summary PROPERTIES LABELS "md" TIMEOUT 30
                       ENVIRONMENT "HALOX_DEVICE=cpu")
  # the launcher's variables read without a launcher: threads under "P > 1 processes" refused
  # before anything starts; a build without MPI refuses such a launch whatever the transport
  function(halox_md_launch_env name env pattern)
    add_test(NAME ${name} COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_error.sh "${pattern}"
             $<TARGET_FILE:halox-md> ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "md" TIMEOUT 30
                         ENVIRONMENT "HALOX_DEVICE=cpu;${env}")
  endfunction()
  if(HALOX_HAVE_MPI)
    halox_md_launch_env(md_launch_env_ompi_threads "OMPI_COMM_WORLD_SIZE=2"
                        "--transport threads runs every rank .* with 2 processes \\(OMPI_COMM_WORLD_SIZE=2\\)"
                        --cells 3,3,3 --steps 2 --transport threads)
    halox_md_launch_env(md_launch_env_pmi_threads "PMI_SIZE=4"
                        "--transport threads runs every rank .* with 4 processes \\(PMI_SIZE=4\\)"
                        --cells 3,3,3 --steps 2 --transport threads)
  else()
    halox_md_launch_env(md_launch_env_nompi "PMI_SIZE=2"
                        "with 2 processes \\(PMI_SIZE=2\\), but this build has no MPI"
                        --cells 3,3,3 --steps 2 --transport threads)
  endif()
endif()

# values beyond a range on the command line and in XYZ files: exit 2 at once with the numbers
# (a box beyond float would loop forever, deaf to SIGTERM: the TIMEOUT catches a hang)
if(TARGET halox-md)
  function(halox_md_error name pattern)
    add_test(NAME ${name} COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_error.sh "${pattern}"
             $<TARGET_FILE:halox-md> ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "md" TIMEOUT 30 ENVIRONMENT "HALOX_DEVICE=cpu")
  endfunction()
  halox_md_error(md_err_density_float_range
                 "density 1e-120 with 3x3x3 fcc cells: box edge x 4.7622e\\+40 .*largest single"
                 --preset lammps-lj --cells 3,3,3 --density 1e-120 --steps 2)
  halox_md_error(md_err_density_resolution "box edge x 47622 is more than 8192 cut-offs"
                 --cells 3,3,3 --density 1e-12 --steps 2)
  halox_md_error(md_err_skin_pulses "needs 9.92e\\+16 pulses in x even with 1 rank" --cells 6,6,6
                 --grid 2x1x1 --skin 1e18 --steps 2)
  halox_md_error(md_err_seed_space_negative
                 "--seed ' -1': give an integer from 0 to 18446744073709551615" --cells 3,3,3
                 --steps 2 --seed " -1")
  halox_md_error(md_err_seed_huge "--seed '99999999999999999999': give an integer" --cells 3,3,3
                 --steps 2 --seed 99999999999999999999)
  # 64 atoms, 2 apart, in a box of 8
  set(_xyz_atoms "")
  foreach(_i RANGE 0 63)
    math(EXPR _x "(${_i} % 4) * 2")
    math(EXPR _y "(${_i} / 4 % 4) * 2")
    math(EXPR _z "(${_i} / 16) * 2")
    string(APPEND _xyz_atoms "Ar ${_x} ${_y} ${_z}\n")
  endforeach()
  set(_xyz_dir ${CMAKE_CURRENT_BINARY_DIR}/xyz-inputs)
  set(_xyz_head "Lattice=\"8 0 0 0 8 0 0 0 8\" Properties=species:S:1:pos:R:3")
  file(WRITE ${_xyz_dir}/trailing.xyz "50\n${_xyz_head}\n${_xyz_atoms}")
  file(WRITE ${_xyz_dir}/two-frames.xyz "64\n${_xyz_head}\n${_xyz_atoms}64\n${_xyz_head}\n${_xyz_atoms}\n")
  file(WRITE ${_xyz_dir}/huge-box.xyz
       "64\nLattice=\"1e39 0 0 0 1e39 0 0 0 1e39\"\n${_xyz_atoms}")
  halox_md_error(md_err_xyz_trailing
                 "announces 50 atoms, but the frame holds 64 atom lines \\(line 53, 'Ar 4 0 6'"
                 --read ${_xyz_dir}/trailing.xyz --steps 2)
  halox_md_error(md_err_xyz_float_range
                 "huge-box.xyz': box edge x 1e\\+39 plus the halo distance .*largest single"
                 --read ${_xyz_dir}/huge-box.xyz --steps 2)
  add_test(NAME md_xyz_two_frames COMMAND $<TARGET_FILE:halox-md> --read
           ${_xyz_dir}/two-frames.xyz --steps 2)
  set_tests_properties(md_xyz_two_frames PROPERTIES LABELS "md" TIMEOUT 30
                       ENVIRONMENT "HALOX_DEVICE=cpu" PASS_REGULAR_EXPRESSION "Summary.*atoms 64,")
  # the frame read is said (the last by default, or --read-frame), and where the
  # velocities come from; one frame beyond the last, trajectory options that cannot be met
  add_test(NAME md_read_frame_last COMMAND $<TARGET_FILE:halox-md> --read
           ${_xyz_dir}/two-frames.xyz --steps 0)
  set_tests_properties(md_read_frame_last PROPERTIES LABELS "md" TIMEOUT 30
                       ENVIRONMENT "HALOX_DEVICE=cpu" PASS_REGULAR_EXPRESSION
                       "frame 1 = the last of 2 \\(from 0; --read-frame N reads another\\), 64 atoms\nvelocities: drawn at T 1.44 \\(the frame has none\\)")
  add_test(NAME md_read_frame_0 COMMAND $<TARGET_FILE:halox-md> --read
           ${_xyz_dir}/two-frames.xyz --read-frame 0 --steps 0)
  set_tests_properties(md_read_frame_0 PROPERTIES LABELS "md" TIMEOUT 30
                       ENVIRONMENT "HALOX_DEVICE=cpu" PASS_REGULAR_EXPRESSION "frame 0 of 2 \\(from 0\\), 64 atoms")
  # the tool reads back its own dump of 10976 atoms (a count line as long as "ITEM: ", whose
  # item name the reader once lost)
  add_test(NAME md_read_own_dump_write COMMAND $<TARGET_FILE:halox-md> --cells 14,14,14 --steps 0
           --traj ${_xyz_dir}/own-10976.lammpstrj)
  set_tests_properties(md_read_own_dump_write PROPERTIES LABELS "md" TIMEOUT 60
                       ENVIRONMENT "HALOX_DEVICE=cpu" FIXTURES_SETUP md_own_dump)
  add_test(NAME md_read_own_dump COMMAND $<TARGET_FILE:halox-md> --read
           ${_xyz_dir}/own-10976.lammpstrj --steps 0)
  set_tests_properties(md_read_own_dump PROPERTIES LABELS "md" TIMEOUT 60
                       ENVIRONMENT "HALOX_DEVICE=cpu" FIXTURES_REQUIRED md_own_dump
                       PASS_REGULAR_EXPRESSION
                       "own-10976.lammpstrj \\(LAMMPS dump\\), frame 0 of 1 .*, step 0, 10976 atoms\n")
  halox_md_error(md_err_read_frame_beyond
                 "two-frames.xyz holds 2 frames \\(0 to 1\\): frame 2 is beyond the last; give --read-frame from 0 to 1, or last"
                 --read ${_xyz_dir}/two-frames.xyz --read-frame 2 --steps 2)
  halox_md_error(md_err_read_frame_word "--read-frame 'first': give a frame number from 0"
                 --read ${_xyz_dir}/two-frames.xyz --read-frame first)
  halox_md_error(md_err_read_frame_alone "--read-frame is for --read FILE" --read-frame 1)
  halox_md_error(md_err_new_velocities_alone "--new-velocities is for --read FILE"
                 --new-velocities)
  halox_md_error(md_err_traj_name "--traj 'out.dat': the name says no format: end it in .xyz"
                 --traj out.dat)
  halox_md_error(md_err_traj_twice "--traj and --xyz both name a trajectory" --traj a.xyz
                 --xyz b.xyz)
  halox_md_error(md_err_traj_every_alone "--traj-every needs --xyz FILE or --traj FILE"
                 --traj-every 5)
  # --equilibrate N: a count of steps from 0, and not with --restart (the checkpoint's
  # state is past it)
  halox_md_error(md_err_equilibrate_negative
                 "--equilibrate '-5': give a number of steps from 0 \\(none\\) to 1000000000"
                 --cells 3,3,3 --steps 2 --equilibrate -5)
  halox_md_error(md_err_equilibrate_word "--equilibrate '30x': give a number of steps from 0"
                 --cells 3,3,3 --steps 2 --equilibrate 30x)
  halox_md_error(md_err_equilibrate_huge
                 "--equilibrate '10000000000': give a number of steps from 0 \\(none\\) to 1000000000"
                 --cells 3,3,3 --steps 2 --equilibrate 10000000000)
  halox_md_error(md_err_equilibrate_missing "--equilibrate needs a value" --cells 3,3,3
                 --equilibrate)
  halox_md_error(md_err_equilibrate_restart
                 "--equilibrate cannot be combined with --restart: the checkpoint fixes the system"
                 --restart none.chk --steps 20 --equilibrate 10)
endif()

# the summary's time split adds up to the ms/step it reports (tests/md/md_split.py)
if(TARGET halox-md AND Python3_Interpreter_FOUND)
  add_test(NAME md_split_cpu COMMAND ${Python3_EXECUTABLE}
                                     ${PROJECT_SOURCE_DIR}/tests/md/md_split.py
                                     $<TARGET_FILE:halox-md> --cells 5,5,5 --steps 40 --grid 2x1x1
                                     --device cpu)
  set_tests_properties(md_split_cpu PROPERTIES LABELS "md" TIMEOUT 120)
endif()

# scripts/plot/timeline.py (HALOX_MD_TIMELINE's files lined up) on stamps with known times
if(Python3_Interpreter_FOUND)
  add_test(NAME md_timeline_script
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/md/timeline_test.py)
  set_tests_properties(md_timeline_script PROPERTIES LABELS "md" TIMEOUT 60)
endif()

# the trajectories opened by ASE, MDAnalysis and OVITO: frames, atoms, positions, box,
# periodicity and velocities against halox-md's own numbers (tests/md/readers.py; skipped, exit 77,
# when ase or MDAnalysis is not installed; OVITO's checks only where it imports)
if(TARGET halox-md AND Python3_Interpreter_FOUND)
  add_test(NAME md_readers COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/md/readers.py
                                   $<TARGET_FILE:halox-md>)
  set_tests_properties(md_readers PROPERTIES LABELS "md" TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()

# the pair-list buffer from an energy-drift tolerance (md/engine/verlet_buffer.h): the
# estimate and the choice, NVE drift within the bound with the chosen buffer and beyond it without
# one, the tool's banner and JSON; bad values refused with exit 2
if(TARGET halox-md)
  halox_test(test_md_verlet SOURCES md/test_md_verlet.c LABELS md TIMEOUT 120
             ARGS $<TARGET_FILE:halox-md>)
  add_dependencies(test_md_verlet halox-md)
  foreach(_v abc 0 -1e-3 nan inf 1e999 5x)
    string(MAKE_C_IDENTIFIER "${_v}" _vid)
    halox_md_error(md_err_verlet_tolerance_${_vid}
                   "--verlet-tolerance '${_v}': give a finite energy drift > 0, energy per atom per unit time"
                   --cells 5,5,5 --steps 2 --verlet-tolerance ${_v})
  endforeach()
  halox_md_error(md_err_verlet_tolerance_missing "--verlet-tolerance needs a value" --cells 5,5,5
                 --verlet-tolerance)
  halox_md_error(md_err_verlet_tolerance_restart
                 "--verlet-tolerance cannot be combined with --restart: the checkpoint fixes"
                 --restart none.chk --steps 20 --verlet-tolerance 1e-3)
  halox_md_error(md_err_verlet_tolerance_skin
                 "Verlet-buffer tolerance 1e-09: skin 0 is too small even for lists rebuilt every step \\(estimated drift [0-9.e+-]+\\)"
                 --cells 5,5,5 --shift --steps 2 --skin 0 --verlet-tolerance 1e-9)
  halox_md_error(md_err_verlet_tolerance_interval
                 "Verlet-buffer tolerance 1e-300: no skin up to the cut-off \\(2.5\\) keeps the estimated drift of lists rebuilt every 100 steps"
                 --cells 5,5,5 --steps 2 --rebuild-every 100 --verlet-tolerance 1e-300)
endif()

# the engine's settings by name (include/halox/md_options.h): the table, every value good and
# bad, the combinations, the launch rules (threads under a launcher, mpi by default, grid size)
# and the transports' capabilities (tools ask capabilities, not names)
halox_test(test_md_options SOURCES md/test_md_options.c LABELS md TIMEOUT 60)
