PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE suites (
  id            INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  definition    TEXT NOT NULL,              -- the suite file (TOML) as run
  started_at    TEXT NOT NULL,
  finished_at   TEXT,                       -- NULL while running or if the runner died
  git_revision  TEXT NOT NULL,
  host_facts    TEXT NOT NULL CHECK (json_valid(host_facts)),
  environment   TEXT NOT NULL CHECK (json_valid(environment)),
  command_line  TEXT NOT NULL
);
INSERT INTO suites VALUES(1,'golden',replace('# Golden inputs for the refactoring test: every table gets rows.\nname = "golden"\ndescription = "tiny model: ok, skipped, failed and validation cases"\nrepetitions = 1\ntimeout_s = 120\n\n[base]\nmodel = "tiny"\ndata = "builtin:stories"\nbatch = 4\nblock = 32\nsteps = 4\nwarmup_steps = 1\nthreads = 1\neval_every = 2\n\n[[case]]\nmode = "naive"\nranks = 1\n\n[[case]]\nmode = "sharded"\nranks = 2\nreduce = "overlap"\nbucket_mb = 0.001\n\n[[case]]\nmode = "naive"\nranks = 2\n\n','\n',char(10)),'2026-11-22T22:24:08.278Z','2026-11-22T22:24:08.776Z','90a0caab1c0c','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run golden.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run golden.toml');
INSERT INTO suites VALUES(2,'golden-fail',replace('name = "golden-fail"\ntimeout_s = 120\n[base]\nmodel = "tiny"\nbatch = 4\nblock = 32\nsteps = 12\nthreads = 1\nlr = 1e30\nextra_args = ["--grad-clip", "0"]\n[[case]]\nmode = "naive"\nranks = 1\n','\n',char(10)),'2026-11-22T22:24:08.795Z','2026-11-22T22:24:08.859Z','90a0caab1c0c','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run fail.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run fail.toml');
INSERT INTO suites VALUES(3,'golden-allreduce',replace('name = "golden-allreduce"\nkind = "allreduce"\ntimeout_s = 120\n[base]\nranks = 2\nmin_bytes = 8\nmax_bytes = 4096\nfactor = 8\niters = 3\nwarmup = 1\n[grid]\ntransport = ["shm", "tcp"]\n','\n',char(10)),'2026-11-22T22:24:08.876Z','2026-11-22T22:24:09.205Z','90a0caab1c0c','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run ar.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run ar.toml');
CREATE TABLE runs (
  id               INTEGER PRIMARY KEY,
  suite_id         INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
  case_name        TEXT NOT NULL,
  config           TEXT NOT NULL CHECK (json_valid(config)),
  mode             TEXT NOT NULL,
  reduction        TEXT NOT NULL,
  bucket_mb        REAL,
  world_size       INTEGER NOT NULL,
  threads          INTEGER NOT NULL,
  transport        TEXT NOT NULL CHECK (json_valid(transport)),
  links            TEXT NOT NULL,
  launcher_command TEXT NOT NULL,
  repetition       INTEGER NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'skipped')),
  exit_code        INTEGER,
  error            TEXT NOT NULL DEFAULT '',
  started_at       TEXT NOT NULL,
  finished_at      TEXT,
  -- From the run summary; all NULL when the run produced none.
  summary_schema     TEXT,
  trainscope_version TEXT,
  git_revision       TEXT,
  model              TEXT CHECK (model IS NULL OR json_valid(model)),
  options            TEXT CHECK (options IS NULL OR json_valid(options)),
  summary_world_size INTEGER,
  threads_per_rank   INTEGER,
  hosts              TEXT CHECK (hosts IS NULL OR json_valid(hosts)),
  summary_transport  TEXT CHECK (summary_transport IS NULL OR json_valid(summary_transport)),
  transport_per_rank TEXT CHECK (transport_per_rank IS NULL OR json_valid(transport_per_rank)),
  summary_status     TEXT CHECK (summary_status IS NULL OR summary_status IN ('ok', 'failed')),
  summary_error      TEXT,
  failed_step        INTEGER,
  step_lists         INTEGER,               -- number of per-rank step lists in the summary
  tokens_per_s       REAL,
  step_time_median_s REAL,
  step_time_p95_s    REAL
);
INSERT INTO runs VALUES(1,1,'naive-r1-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"naive","model":"tiny","name":"naive-r1-fused-t1","ranks":1,"reduce":"fused","shard":"strided","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,1,1,'{}','auto','/work/main/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-uW3JcR/case-1.json --quiet',0,'ok',0,'','2026-11-22T22:24:08.279Z','2026-11-22T22:24:08.362Z','trainscope.run_summary/1','0.1.0','90a0caab1c0c','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":32.0,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":2,"grad_clip":1.0,"lr":0.0003,"lr_warmup":0,"min_lr":0.0,"mode":"naive","model":"tiny","reduce":"fused","schedule":"constant","seed":42,"shard":"strided","steps":4,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',1,1,'["vm"]','{}','[]','ok','',NULL,1,80721.914307178129089,0.0015361380000000000433,0.0016224138000000001228);
INSERT INTO runs VALUES(2,1,'sharded-r2-overlap-b0.001-t1','{"batch":4,"block":32,"bucket_mb":0.001,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"sharded","model":"tiny","name":"sharded-r2-overlap-b0.001-t1","ranks":2,"reduce":"overlap","shard":"strided","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','sharded','overlap',0.0010000000000000000208,2,1,'{"btl_tcp_if_include":"lo","oob_tcp_if_include":"lo"}','auto','/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/main/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-uW3JcR/case-2.json --quiet',0,'ok',0,'','2026-11-22T22:24:08.363Z','2026-11-22T22:24:08.775Z','trainscope.run_summary/1','0.1.0','90a0caab1c0c','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":0.001,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":2,"grad_clip":1.0,"lr":0.0003,"lr_warmup":0,"min_lr":0.0,"mode":"sharded","model":"tiny","reduce":"overlap","schedule":"constant","seed":42,"shard":"strided","steps":4,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',2,1,'["vm"]','{"btl_tcp_if_include":"lo","ess":"pmi","hwloc_base_binding_policy":"none","mpi_oversubscribe":"0","oob_tcp_if_include":"lo"}','[]','ok','',NULL,2,110983.5198423317779,0.0011172830000000001648,0.0011341382000000000979);
INSERT INTO runs VALUES(3,1,'naive-r2-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"naive","model":"tiny","name":"naive-r2-fused-t1","ranks":2,"reduce":"fused","shard":"strided","skip_reason":"naive runs one process; this case has 2 ranks","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,2,1,'{"btl_tcp_if_include":"lo","oob_tcp_if_include":"lo"}','auto','/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/main/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-uW3JcR/case-3.json --quiet',0,'skipped',NULL,'naive runs one process; this case has 2 ranks','2026-11-22T22:24:08.776Z','2026-11-22T22:24:08.776Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO runs VALUES(4,2,'naive-r1-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":0,"extra_args":["--grad-clip","0"],"kind":"train","links":0,"lr":1e+30,"mode":"naive","model":"tiny","name":"naive-r1-fused-t1","ranks":1,"reduce":"fused","shard":"strided","steps":12,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,1,1,'{}','auto','/work/main/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 12 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 0 --shard strided --lr 1e+30 --threads 1 --summary /tmp/trainscope-suite-3kUmer/case-1.json --quiet --grad-clip 0',0,'failed',1,replace('exit code 1; stderr:\ntrainscope: error: loss is -nan at step 2','\n',char(10)),'2026-11-22T22:24:08.796Z','2026-11-22T22:24:08.858Z','trainscope.run_summary/1','0.1.0','90a0caab1c0c','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":32.0,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":0,"grad_clip":0.0,"lr":1e+30,"lr_warmup":0,"min_lr":0.0,"mode":"naive","model":"tiny","reduce":"fused","schedule":"constant","seed":42,"shard":"strided","steps":12,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',1,1,'["vm"]','{}','[]','failed','loss is -nan at step 2',2,1,222597.20676408283179,0.00055706000000000006379,0.00060480410000000005277);
INSERT INTO runs VALUES(5,3,'allreduce-r2-shm','{"kind":"allreduce","links":0,"name":"allreduce-r2-shm","ranks":2,"sweep":{"factor":8,"iters":3,"max_bytes":4096,"min_bytes":8,"warmup":1},"threads":0,"transport":"shm"}','allreduce','',NULL,2,0,'{"btl":"vader,self","btl_tcp_if_include":"lo","oob_tcp_if_include":"lo","pml":"ob1"}','shm','/usr/bin/mpirun -np 2 --bind-to none --mca pml ob1 --mca btl vader,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/main/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --jsonl /tmp/trainscope-suite-Ins1Iy/case-1.jsonl',0,'ok',0,'','2026-11-22T22:24:08.877Z','2026-11-22T22:24:09.040Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO runs VALUES(6,3,'allreduce-r2-tcp','{"kind":"allreduce","links":0,"name":"allreduce-r2-tcp","ranks":2,"sweep":{"factor":8,"iters":3,"max_bytes":4096,"min_bytes":8,"warmup":1},"threads":0,"transport":"tcp"}','allreduce','',NULL,2,0,'{"btl":"tcp,self","btl_tcp_if_include":"lo","btl_tcp_links":"1","oob_tcp_if_include":"lo","pml":"ob1"}','1','/usr/bin/mpirun -np 2 --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_links 1 --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/main/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --jsonl /tmp/trainscope-suite-Ins1Iy/case-2.jsonl',0,'ok',0,'','2026-11-22T22:24:09.041Z','2026-11-22T22:24:09.205Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE rank_results (
  run_id                INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank                  INTEGER NOT NULL,
  host                  TEXT NOT NULL,
  pid                   INTEGER NOT NULL,
  tokens_per_s          REAL,
  step_time_mean_s      REAL,
  step_time_median_s    REAL,
  step_time_p95_s       REAL,
  step_time_min_s       REAL,
  step_time_max_s       REAL,
  tracked_peak_total    INTEGER NOT NULL,
  peak_parameters       INTEGER NOT NULL,
  peak_gradients        INTEGER NOT NULL,
  peak_optimizer_state  INTEGER NOT NULL,
  peak_activations      INTEGER NOT NULL,
  peak_data             INTEGER NOT NULL,
  peak_comm             INTEGER NOT NULL,
  peak_workspace        INTEGER NOT NULL,
  peak_other            INTEGER NOT NULL,
  vm_hwm                INTEGER,            -- NULL: unknown
  vm_rss                INTEGER,
  pss                   INTEGER,
  data_examples_held    INTEGER NOT NULL,
  data_tokens_held      INTEGER NOT NULL,
  data_bytes_held       INTEGER NOT NULL,
  data_bytes_read       INTEGER NOT NULL,
  comm_calls            INTEGER NOT NULL,
  comm_bytes            INTEGER NOT NULL,
  comm_time_s           REAL,
  comm_exposed_s        REAL,
  PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;
INSERT INTO rank_results VALUES(1,0,'vm',6521,80721.914307178129089,0.0012586443333333333267,0.0015361380000000000433,0.0016224138000000001228,0.0006077950000000000583,0.0016320000000000002039,5440008,149120,149120,298240,730608,5440008,0,196356,0,15540224,15433728,10662912,20000,640000,2880008,10092471,4,596480,1.1329999999999999943e-06,1.1329999999999999943e-06);
INSERT INTO rank_results VALUES(2,0,'vm',6526,55539.978482737365995,0.00094860600000000005853,0.0011163130000000000708,0.0011209093000000001135,0.00060808500000000007077,0.0011214200000000001423,2960008,149120,149120,298240,365304,2960008,0,101124,0,24055808,24055808,12765184,10000,320000,1600008,5044983,572,596480,0.00055518900000000009475,0.00079845199999999984241);
INSERT INTO rank_results VALUES(2,1,'vm',6527,55491.759921165888956,0.00095497833333333336479,0.0011172830000000001648,0.0011341382000000000979,0.00061164100000000000759,0.0011360110000000001387,2960008,149120,149120,298240,365304,2960008,0,101124,0,24006656,24006656,12726272,10000,320000,1600008,5047488,572,596480,0.00065568600000000026774,0.00089251700000000000652);
INSERT INTO rank_results VALUES(4,0,'vm',6538,222597.20676408283179,0.00055706000000000006379,0.00055706000000000006379,0.00060480410000000005277,0.00050401100000000006399,0.00061010900000000006359,5440008,149120,149120,298240,730608,5440008,0,196356,0,15872000,15384576,10592256,20000,640000,2880008,10092471,2,298240,4.6999999999999999989e-07,4.6999999999999999989e-07);
CREATE TABLE rank_phase_stats (
  run_id   INTEGER NOT NULL,
  rank     INTEGER NOT NULL,
  phase    TEXT NOT NULL CHECK (phase IN ('data', 'forward', 'backward', 'comm', 'optimizer',
                                          'eval', 'checkpoint')),
  mean_s   REAL,
  median_s REAL,
  p95_s    REAL,
  min_s    REAL,
  max_s    REAL,
  PRIMARY KEY (run_id, rank, phase),
  FOREIGN KEY (run_id, rank) REFERENCES rank_results(run_id, rank) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO rank_phase_stats VALUES(1,0,'backward',0.00029387400000000001238,0.00027636100000000003284,0.00032738650000000004769,0.00027220500000000002723,0.00033305600000000003127);
INSERT INTO rank_phase_stats VALUES(1,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(1,0,'comm',1.6066666666666667599e-07,1.6099999999999999906e-07,1.961000000000000156e-07,1.2100000000000001146e-07,2.0000000000000001741e-07);
INSERT INTO rank_phase_stats VALUES(1,0,'data',3.124666666666666509e-06,2.8239999999999999824e-06,3.9237999999999995997e-06,2.5040000000000000816e-06,4.0459999999999998868e-06);
INSERT INTO rank_phase_stats VALUES(1,0,'eval',0.0006302620000000000314,0.000932188000000000027,0.00095595700000000000898,0.0,0.00095859800000000006722);
INSERT INTO rank_phase_stats VALUES(1,0,'forward',0.0002355210000000000105,0.00023406900000000002508,0.00023913420000000001853,0.00023279700000000002777,0.00023969700000000000576);
INSERT INTO rank_phase_stats VALUES(1,0,'optimizer',9.5198666666666673834e-05,9.5212000000000009299e-05,9.5608900000000005443e-05,9.4731000000000011706e-05,9.5653000000000000507e-05);
INSERT INTO rank_phase_stats VALUES(2,0,'backward',0.0001606953333333333532,0.00014845999999999999821,0.00018192830000000000437,0.00014797900000000001417,0.00018564700000000002011);
INSERT INTO rank_phase_stats VALUES(2,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(2,0,'comm',0.00018454233333333337069,0.00016920300000000004,0.00021106200000000000633,0.00016871100000000004539,0.00021571299999999999958);
INSERT INTO rank_phase_stats VALUES(2,0,'data',1.2323333333333334494e-06,1.2120000000000000001e-06,1.4738999999999999829e-06,9.8200000000000008471e-07,1.5030000000000000515e-06);
INSERT INTO rank_phase_stats VALUES(2,0,'eval',0.00035745900000000007529,0.00053484700000000007843,0.0005372617000000000538,0.0,0.00053753000000000003902);
INSERT INTO rank_phase_stats VALUES(2,0,'forward',0.00014295266666666667774,0.00014643800000000000978,0.00015339589999999999952,0.00012825100000000001602,0.00015416900000000000742);
INSERT INTO rank_phase_stats VALUES(2,0,'optimizer',0.00010123700000000000667,9.7475000000000011184e-05,0.00010863320000000001557,9.6363000000000012344e-05,0.00010987300000000001004);
INSERT INTO rank_phase_stats VALUES(2,1,'backward',0.00015526566666666666641,0.00014645700000000001078,0.00017445150000000000847,0.00014177800000000001035,0.0001775620000000000052);
INSERT INTO rank_phase_stats VALUES(2,1,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(2,1,'comm',0.00020228633333333332819,0.00018148999999999999876,0.00023988199999999999128,0.00017899899999999999838,0.00024636999999999998744);
INSERT INTO rank_phase_stats VALUES(2,1,'data',1.1283333333333332593e-06,9.7199999999999996871e-07,1.5659999999999999142e-06,7.8100000000000001864e-07,1.6320000000000000023e-06);
INSERT INTO rank_phase_stats VALUES(2,1,'eval',0.00036125099999999998748,0.00053544699999999998459,0.00054702009999999998395,0.0,0.00054830600000000003207);
INSERT INTO rank_phase_stats VALUES(2,1,'forward',0.00013781533333333332832,0.00012736000000000000033,0.00015696910000000000116,0.00012582700000000001348,0.00016025899999999999824);
INSERT INTO rank_phase_stats VALUES(2,1,'optimizer',9.6777666666666680231e-05,9.6794000000000008721e-05,9.7100900000000010814e-05,9.6404000000000007377e-05,9.7135000000000011046e-05);
INSERT INTO rank_phase_stats VALUES(4,0,'backward',0.00027889500000000003263,0.00027889500000000003263,0.00028071570000000003368,0.00027687200000000000135,0.00028091800000000000971);
INSERT INTO rank_phase_stats VALUES(4,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(4,0,'comm',1.6049999999999998796e-07,1.6049999999999998796e-07,1.6094999999999999531e-07,1.6000000000000000333e-07,1.6099999999999999906e-07);
INSERT INTO rank_phase_stats VALUES(4,0,'data',1.2420000000000001364e-06,1.2420000000000001364e-06,1.2870000000000001291e-06,1.1919999999999999799e-06,1.2920000000000000813e-06);
INSERT INTO rank_phase_stats VALUES(4,0,'eval',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(4,0,'forward',0.00022939200000000002904,0.00022939200000000002904,0.0002365938000000000047,0.00022139000000000001993,0.00023739400000000001104);
INSERT INTO rank_phase_stats VALUES(4,0,'optimizer',4.7025000000000004621e-05,4.7025000000000004621e-05,8.9347500000000004711e-05,0.0,9.4050000000000009243e-05);
CREATE TABLE steps (
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank           INTEGER NOT NULL,
  step           INTEGER NOT NULL,
  loss           REAL,
  lr             REAL,
  grad_norm      REAL,
  tokens         INTEGER NOT NULL,
  step_time_s    REAL,
  data_s         REAL,
  forward_s      REAL,
  backward_s     REAL,
  comm_s         REAL,
  optimizer_s    REAL,
  eval_s         REAL,
  checkpoint_s   REAL,
  comm_calls     INTEGER NOT NULL,
  comm_bytes     INTEGER NOT NULL,
  comm_exposed_s REAL,
  mem_active     INTEGER NOT NULL,
  mem_peak       INTEGER NOT NULL,
  PRIMARY KEY (run_id, rank, step)
) WITHOUT ROWID;
INSERT INTO steps VALUES(1,0,0,5.5409743520785408321,0.00029999999999999997371,1.4900298110695953113,124,0.0027580470000000000159,0.00014580700000000002209,0.0021550890000000002232,0.00035105300000000004209,1.7130000000000001586e-06,0.00010222200000000001163,0.0,0.0,1,149120,8.919999999999999935e-07,4540452,4540452);
INSERT INTO steps VALUES(1,0,1,5.5099257163144397253,0.00029999999999999997371,1.3712180607143664712,124,0.0016322599999999999609,4.0459999999999998868e-06,0.00023969700000000000576,0.00033305600000000003127,2.0000000000000001741e-07,9.5653000000000000507e-05,0.00095859800000000006722,0.0,1,149120,9.9999999999999995472e-08,4548452,4548452);
INSERT INTO steps VALUES(1,0,2,5.4888101812522700484,0.00029999999999999997371,1.4077083243961217018,124,0.00060802499999999999342,2.8239999999999999824e-06,0.00023279700000000002777,0.00027636100000000003284,1.6099999999999999906e-07,9.5212000000000009299e-05,0.0,0.0,1,149120,8.0999999999999997392e-08,4548452,4548452);
INSERT INTO steps VALUES(1,0,3,5.4716229732448740108,0.00029999999999999997371,1.4862818025822188694,124,0.0015361780000000000226,2.5040000000000000816e-06,0.00023406900000000002508,0.00027220500000000002723,1.2100000000000001146e-07,9.4731000000000011706e-05,0.000932188000000000027,0.0,1,149120,5.9999999999999994639e-08,4548452,4548452);
INSERT INTO steps VALUES(2,0,0,5.5409743520785399439,0.00029999999999999997371,1.490029740481856546,62,0.0007788989999999999976,1.2010000000000000208e-06,0.00019520100000000001707,0.00019943600000000001972,0.00025620300000000004051,0.00012580800000000001248,0.0,0.0,143,149120,0.00025195699999999997308,2743420,2743420);
INSERT INTO steps VALUES(2,0,1,5.5099257167561592751,0.00029999999999999997371,1.3712180152787825093,62,0.0011220609999999999351,1.5030000000000000515e-06,0.00015416900000000000742,0.00014845999999999999821,0.00016920300000000004,0.00010987300000000001004,0.00053753000000000003902,0.0,143,149120,0.00016683999999999999503,2743420,2743420);
INSERT INTO steps VALUES(2,0,2,5.488810177066223872,0.00029999999999999997371,1.4077083085373982562,62,0.00060846599999999999817,1.2120000000000000001e-06,0.00014643800000000000978,0.00014797900000000001417,0.00021571299999999999958,9.6363000000000012344e-05,0.0,0.0,143,149120,0.00021315700000000000575,2743420,2743420);
INSERT INTO steps VALUES(2,0,3,5.4716229798578153165,0.00029999999999999997371,1.4862818701086504269,62,0.0011163429999999998926,9.8200000000000008471e-07,0.00012825100000000001602,0.00018564700000000002011,0.00016871100000000004539,9.7475000000000011184e-05,0.00053484700000000007843,0.0,143,149120,0.00016649800000000000406,2743420,2743420);
INSERT INTO steps VALUES(2,1,0,5.5409743520785399439,0.00029999999999999997371,1.490029740481856546,62,0.00076170499999999999925,2.5240000000000003134e-06,0.00019952700000000001597,0.00015343700000000000155,0.00029720400000000002285,0.00010750000000000001091,0.0,0.0,143,149120,0.00029293800000000001998,2743420,2743420);
INSERT INTO steps VALUES(2,1,1,5.5099257167561592751,0.00029999999999999997371,1.3712180152787825093,62,0.0011362419999999999811,1.6320000000000000023e-06,0.00016025899999999999824,0.00014645700000000001078,0.00018148999999999999876,9.7135000000000011046e-05,0.00054830600000000003207,0.0,143,149120,0.00017900899999999999321,2743420,2743420);
INSERT INTO steps VALUES(2,1,2,5.488810177066223872,0.00029999999999999997371,1.4077083085373982562,62,0.00061202200000000004341,9.7199999999999996871e-07,0.00012582700000000001348,0.00014177800000000001035,0.00024636999999999998744,9.6404000000000007377e-05,0.0,0.0,143,149120,0.0002439459999999999849,2743420,2743420);
INSERT INTO steps VALUES(2,1,3,5.4716229798578153165,0.00029999999999999997371,1.4862818701086504269,62,0.0011173240000000000515,7.8100000000000001864e-07,0.00012736000000000000033,0.0001775620000000000052,0.00017899899999999999838,9.6794000000000008721e-05,0.00053544699999999998459,0.0,143,149120,0.00017662400000000000842,2743420,2743420);
INSERT INTO steps VALUES(4,0,0,5.5409743520785408321,1.0000000000000000198e+30,1.4900298110695953113,124,0.00086826299999999997751,0.00012624800000000000149,0.0003499610000000000329,0.00029514900000000002982,9.7199999999999996871e-07,9.4791000000000007735e-05,0.0,0.0,1,149120,3.7000000000000000444e-07,4404444,4404444);
INSERT INTO steps VALUES(4,0,1,5.560681631015538251,1.0000000000000000198e+30,NULL,124,0.00061032899999999994967,1.1919999999999999799e-06,0.00023739400000000001104,0.00027687200000000000135,1.6000000000000000333e-07,9.4050000000000009243e-05,0.0,0.0,1,149120,9.9999999999999995472e-08,4404444,4404444);
CREATE TABLE val_losses (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  loss   REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
INSERT INTO val_losses VALUES(1,2,5.5126562893973831691);
INSERT INTO val_losses VALUES(1,4,5.4819362722132920495);
INSERT INTO val_losses VALUES(2,2,5.5126562881857843478);
INSERT INTO val_losses VALUES(2,4,5.4819362710815013883);
CREATE TABLE poller_samples (
  id        INTEGER PRIMARY KEY,
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s       REAL NOT NULL,
  pid       INTEGER NOT NULL,
  ppid      INTEGER NOT NULL,
  role      TEXT NOT NULL,
  rank      INTEGER,                         -- NULL: not a rank
  rss_bytes INTEGER NOT NULL,
  pss_bytes INTEGER,                         -- NULL: unknown
  command   TEXT NOT NULL
);
INSERT INTO poller_samples VALUES(1,1,3.3650000000000004777e-05,6521,6517,'other',NULL,1171456,675840,'/work/main/build/trainscope suite run golden.toml --db g.db');
INSERT INTO poller_samples VALUES(2,2,2.0641000000000001089e-05,6522,6517,'other',NULL,1208320,700416,'/work/main/build/trainscope suite run golden.toml --db g.db');
INSERT INTO poller_samples VALUES(3,2,0.26197610200000004399,6522,6517,'launcher',NULL,21217280,15098880,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/main/build/trainsc...');
INSERT INTO poller_samples VALUES(4,2,0.26197610200000004399,6526,6522,'rank',0,19042304,8766464,'/work/main/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --block 32...');
INSERT INTO poller_samples VALUES(5,2,0.26197610200000004399,6527,6522,'rank',1,18919424,8657920,'/work/main/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --block 32...');
INSERT INTO poller_samples VALUES(6,4,3.0825999999999999289e-05,6538,6534,'other',NULL,1228800,688128,'/work/main/build/trainscope suite run fail.toml --db g.db');
INSERT INTO poller_samples VALUES(7,5,2.7631000000000000233e-05,6543,6539,'other',NULL,1236992,686080,'/work/main/build/trainscope suite run ar.toml --db g.db');
INSERT INTO poller_samples VALUES(8,6,1.9879000000000000592e-05,6553,6539,'other',NULL,1236992,688128,'/work/main/build/trainscope suite run ar.toml --db g.db');
CREATE TABLE allreduce_rows (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  transport  TEXT NOT NULL,
  links      TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  dtype      TEXT NOT NULL,
  redop      TEXT NOT NULL,
  time_us    REAL,
  algbw_gbps REAL,
  busbw_gbps REAL,
  wrong      INTEGER NOT NULL
);
INSERT INTO allreduce_rows VALUES(1,5,'shm','',2,8,2,'float32','sum',1.6256666666666668152,0.0049210580274759076896,0.0049210580274759076896,0);
INSERT INTO allreduce_rows VALUES(2,5,'shm','',2,64,16,'float32','sum',0.57766666666666666163,0.11079053664166185755,0.11079053664166185755,0);
INSERT INTO allreduce_rows VALUES(3,5,'shm','',2,512,128,'float32','sum',0.73099999999999998312,0.70041039671682636669,0.70041039671682636669,0);
INSERT INTO allreduce_rows VALUES(4,5,'shm','',2,4096,1024,'float32','sum',5.5483333333333328951,0.73823971162511270449,0.73823971162511270449,0);
INSERT INTO allreduce_rows VALUES(5,6,'tcp','1',2,8,2,'float32','sum',12.548666666666665747,0.00063751793019178675751,0.00063751793019178675751,0);
INSERT INTO allreduce_rows VALUES(6,6,'tcp','1',2,64,16,'float32','sum',25.844999999999998863,0.0024763010253433933791,0.0024763010253433933791,0);
INSERT INTO allreduce_rows VALUES(7,6,'tcp','1',2,512,128,'float32','sum',16.755000000000002558,0.030558042375410321422,0.030558042375410321422,0);
INSERT INTO allreduce_rows VALUES(8,6,'tcp','1',2,4096,1024,'float32','sum',28.245333333333331182,0.14501510574018125487,0.14501510574018125487,0);
CREATE INDEX runs_suite_id ON runs(suite_id);
CREATE INDEX runs_status ON runs(status);
CREATE INDEX poller_samples_run_id ON poller_samples(run_id, t_s);
CREATE INDEX allreduce_rows_run_id ON allreduce_rows(run_id, size_bytes);
COMMIT;
