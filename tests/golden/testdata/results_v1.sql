PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE suites (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  definition TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  git_revision TEXT NOT NULL,
  host_facts TEXT NOT NULL CHECK (json_valid(host_facts)),
  environment TEXT NOT NULL CHECK (json_valid(environment)),
  command_line TEXT NOT NULL
);
INSERT INTO suites VALUES(1,'golden',replace('# Golden inputs for the refactoring test: every table gets rows.\nname = "golden"\ndescription = "tiny model: ok, skipped, failed and validation cases"\nrepetitions = 1\ntimeout_s = 120\n\n[base]\nmodel = "tiny"\ndata = "builtin:stories"\nbatch = 4\nblock = 32\nsteps = 4\nwarmup_steps = 1\nthreads = 1\neval_every = 2\n\n[[case]]\nmode = "naive"\nranks = 1\n\n[[case]]\nmode = "sharded"\nranks = 2\nreduce = "overlap"\nbucket_mb = 0.001\n\n[[case]]\nmode = "naive"\nranks = 2\n\n','\n',char(10)),'2026-11-22T23:40:34.633Z','2026-11-22T23:40:36.172Z','2345dbac823e','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run golden_suite.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run golden_suite.toml');
INSERT INTO suites VALUES(2,'golden-fail',replace('name = "golden-fail"\ntimeout_s = 120\n[base]\nmodel = "tiny"\nbatch = 4\nblock = 32\nsteps = 12\nthreads = 1\nlr = 1e30\nextra_args = ["--grad-clip", "0"]\n[[case]]\nmode = "naive"\nranks = 1\n','\n',char(10)),'2026-11-22T23:40:36.230Z','2026-11-22T23:40:36.368Z','2345dbac823e','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run golden_fail_suite.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run golden_fail_suite.toml');
INSERT INTO suites VALUES(3,'golden-allreduce',replace('name = "golden-allreduce"\nkind = "allreduce"\ntimeout_s = 120\n[base]\nranks = 2\nmin_bytes = 8\nmax_bytes = 4096\nfactor = 8\niters = 3\nwarmup = 1\n[grid]\ntransport = ["shm", "tcp"]\n','\n',char(10)),'2026-11-22T23:40:36.422Z','2026-11-22T23:40:37.219Z','2345dbac823e','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run golden_allreduce_suite.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run golden_allreduce_suite.toml');
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
  case_name TEXT NOT NULL,
  config TEXT NOT NULL CHECK (json_valid(config)),
  mode TEXT NOT NULL,
  reduction TEXT NOT NULL,
  bucket_mb REAL,
  world_size INTEGER NOT NULL,
  threads INTEGER NOT NULL,
  transport TEXT NOT NULL CHECK (json_valid(transport)),
  links TEXT NOT NULL,
  launcher_command TEXT NOT NULL,
  repetition INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'skipped')),
  exit_code INTEGER,
  error TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT,
  summary_schema TEXT,
  trainscope_version TEXT,
  git_revision TEXT,
  model TEXT CHECK (model IS NULL OR json_valid(model)),
  options TEXT CHECK (options IS NULL OR json_valid(options)),
  summary_world_size INTEGER,
  threads_per_rank INTEGER,
  hosts TEXT CHECK (hosts IS NULL OR json_valid(hosts)),
  summary_transport TEXT CHECK (summary_transport IS NULL OR json_valid(summary_transport)),
  transport_per_rank TEXT CHECK (transport_per_rank IS NULL OR json_valid(transport_per_rank)),
  summary_status TEXT CHECK (summary_status IS NULL OR summary_status IN ('ok', 'failed')),
  summary_error TEXT,
  failed_step INTEGER,
  step_lists INTEGER,
  tokens_per_s REAL,
  step_time_median_s REAL,
  step_time_p95_s REAL
);
INSERT INTO runs VALUES(1,1,'naive-r1-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"naive","model":"tiny","name":"naive-r1-fused-t1","ranks":1,"reduce":"fused","shard":"strided","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,1,1,'{}','auto','/work/wt-check/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-sLdEgd/case-1.json --quiet',0,'ok',0,'','2026-11-22T23:40:34.637Z','2026-11-22T23:40:34.724Z','trainscope.run_summary/1','0.1.0','2345dbac823e','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":32.0,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":2,"grad_clip":1.0,"lr":0.0003,"lr_warmup":0,"min_lr":0.0,"mode":"naive","model":"tiny","reduce":"fused","schedule":"constant","seed":42,"shard":"strided","steps":4,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',1,1,'["vm"]','{}','[]','ok','',NULL,1,84166.856720859257621,0.0014732640000000001706,0.0014804748000000001253);
INSERT INTO runs VALUES(2,1,'sharded-r2-overlap-b0.001-t1','{"batch":4,"block":32,"bucket_mb":0.001,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"sharded","model":"tiny","name":"sharded-r2-overlap-b0.001-t1","ranks":2,"reduce":"overlap","shard":"strided","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','sharded','overlap',0.0010000000000000000208,2,1,'{"btl_tcp_if_include":"lo","oob_tcp_if_include":"lo"}','auto','/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-sLdEgd/case-2.json --quiet',0,'ok',0,'','2026-11-22T23:40:34.728Z','2026-11-22T23:40:36.166Z','trainscope.run_summary/1','0.1.0','2345dbac823e','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":0.001,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":2,"grad_clip":1.0,"lr":0.0003,"lr_warmup":0,"min_lr":0.0,"mode":"sharded","model":"tiny","reduce":"overlap","schedule":"constant","seed":42,"shard":"strided","steps":4,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',2,1,'["vm"]','{"btl_tcp_if_include":"lo","ess":"pmi","hwloc_base_binding_policy":"none","mpi_oversubscribe":"0","oob_tcp_if_include":"lo"}','[]','ok','',NULL,2,47329.49073849654087,0.0026199310000000002561,0.0027461821000000002576);
INSERT INTO runs VALUES(3,1,'naive-r2-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"naive","model":"tiny","name":"naive-r2-fused-t1","ranks":2,"reduce":"fused","shard":"strided","skip_reason":"naive runs one process; this case has 2 ranks","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,2,1,'{"btl_tcp_if_include":"lo","oob_tcp_if_include":"lo"}','auto','/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-check/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-sLdEgd/case-3.json --quiet',0,'skipped',NULL,'naive runs one process; this case has 2 ranks','2026-11-22T23:40:36.171Z','2026-11-22T23:40:36.171Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO runs VALUES(4,2,'naive-r1-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":0,"extra_args":["--grad-clip","0"],"kind":"train","links":0,"lr":1e+30,"mode":"naive","model":"tiny","name":"naive-r1-fused-t1","ranks":1,"reduce":"fused","shard":"strided","steps":12,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,1,1,'{}','auto','/work/wt-check/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 12 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 0 --shard strided --lr 1e+30 --threads 1 --summary /tmp/trainscope-suite-qsI1WJ/case-1.json --quiet --grad-clip 0',0,'failed',1,replace('exit code 1; stderr:\ntrainscope: error: loss is -nan at step 2','\n',char(10)),'2026-11-22T23:40:36.237Z','2026-11-22T23:40:36.361Z','trainscope.run_summary/1','0.1.0','2345dbac823e','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":32.0,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":0,"grad_clip":0.0,"lr":1e+30,"lr_warmup":0,"min_lr":0.0,"mode":"naive","model":"tiny","reduce":"fused","schedule":"constant","seed":42,"shard":"strided","steps":12,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',1,1,'["vm"]','{}','[]','failed','loss is -nan at step 2',2,1,103612.91551703680307,0.0011967620000000000861,0.0012461009000000000754);
INSERT INTO runs VALUES(5,3,'allreduce-r2-shm','{"kind":"allreduce","links":0,"name":"allreduce-r2-shm","ranks":2,"sweep":{"factor":8,"iters":3,"max_bytes":4096,"min_bytes":8,"warmup":1},"threads":0,"transport":"shm"}','allreduce','',NULL,2,0,'{"btl":"vader,self","btl_tcp_if_include":"lo","oob_tcp_if_include":"lo","pml":"ob1"}','shm','/usr/bin/mpirun -np 2 --bind-to none --mca pml ob1 --mca btl vader,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-check/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --jsonl /tmp/trainscope-suite-aJabT3/case-1.jsonl',0,'ok',0,'','2026-11-22T23:40:36.425Z','2026-11-22T23:40:36.873Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO runs VALUES(6,3,'allreduce-r2-tcp','{"kind":"allreduce","links":0,"name":"allreduce-r2-tcp","ranks":2,"sweep":{"factor":8,"iters":3,"max_bytes":4096,"min_bytes":8,"warmup":1},"threads":0,"transport":"tcp"}','allreduce','',NULL,2,0,'{"btl":"tcp,self","btl_tcp_if_include":"lo","btl_tcp_links":"1","oob_tcp_if_include":"lo","pml":"ob1"}','1','/usr/bin/mpirun -np 2 --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_links 1 --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-check/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --jsonl /tmp/trainscope-suite-aJabT3/case-2.jsonl',0,'ok',0,'','2026-11-22T23:40:36.877Z','2026-11-22T23:40:37.219Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE rank_results (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  tokens_per_s REAL,
  step_time_mean_s REAL,
  step_time_median_s REAL,
  step_time_p95_s REAL,
  step_time_min_s REAL,
  step_time_max_s REAL,
  tracked_peak_total INTEGER NOT NULL,
  peak_parameters INTEGER NOT NULL,
  peak_gradients INTEGER NOT NULL,
  peak_optimizer_state INTEGER NOT NULL,
  peak_activations INTEGER NOT NULL,
  peak_data INTEGER NOT NULL,
  peak_comm INTEGER NOT NULL,
  peak_workspace INTEGER NOT NULL,
  peak_other INTEGER NOT NULL,
  vm_hwm INTEGER,
  vm_rss INTEGER,
  pss INTEGER,
  data_examples_held INTEGER NOT NULL,
  data_tokens_held INTEGER NOT NULL,
  data_bytes_held INTEGER NOT NULL,
  data_bytes_read INTEGER NOT NULL,
  comm_calls INTEGER NOT NULL,
  comm_bytes INTEGER NOT NULL,
  comm_time_s REAL,
  comm_exposed_s REAL,
  load_start_loadavg_1m REAL,
  load_start_loadavg_5m REAL,
  load_start_loadavg_15m REAL,
  load_start_runnable INTEGER,
  load_start_other_runnable INTEGER,
  load_start_cores INTEGER,
  load_end_loadavg_1m REAL,
  load_end_loadavg_5m REAL,
  load_end_loadavg_15m REAL,
  load_end_runnable INTEGER,
  load_end_other_runnable INTEGER,
  load_end_cores INTEGER,
  PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;
INSERT INTO rank_results VALUES(1,0,'vm',25178,84166.856720859257621,0.0011953633333333334425,0.0014732640000000001706,0.0014804748000000001253,0.00063155000000000003669,0.0014812760000000001203,5440008,149120,149120,298240,730608,5440008,0,196356,0,16044032,15564800,8676352,20000,640000,2880008,10092471,4,596480,8.7100000000000000399e-07,8.7100000000000000399e-07,8.1099999999999994315,8.2200000000000006394,7.3499999999999996447,6,5,2,8.1099999999999994315,8.2200000000000006394,7.3499999999999996447,5,4,2);
INSERT INTO rank_results VALUES(2,0,'vm',25183,23673.609652723418548,0.0024908260000000002377,0.0026189500000000000973,0.0027204952000000003596,0.0021217499999999999381,0.0027317780000000002442,2960008,149120,149120,298240,365304,2960008,0,101124,0,24002560,24002560,11422720,10000,320000,1600008,5044983,572,596480,0.86425229100000033888,0.87927610000000000489,8.1899999999999995026,8.2300000000000004263,7.3600000000000003197,6,4,2,8.1899999999999995026,8.2300000000000004263,7.3600000000000003197,12,6,2);
INSERT INTO rank_results VALUES(2,1,'vm',25184,23664.745369248270435,0.0025005936666666669226,0.0026199310000000002561,0.0027461821000000002576,0.0021216400000000001577,0.0027602100000000003542,2960008,149120,149120,298240,365304,2960008,0,101124,0,23871488,23871488,11341824,10000,320000,1600008,5047488,572,596480,0.87003990599999980748,0.88034491399999992289,8.1899999999999995026,8.2300000000000004263,7.3600000000000003197,6,4,2,8.1899999999999995026,8.2300000000000004263,7.3600000000000003197,12,6,2);
INSERT INTO rank_results VALUES(4,0,'vm',25194,103612.91551703680307,0.0011967620000000000861,0.0011967620000000000861,0.0012461009000000000754,0.0011419410000000000497,0.0012515830000000001225,5440008,149120,149120,298240,730608,5440008,0,196356,0,15605760,15572992,8541184,20000,640000,2880008,10092471,2,298240,1.1420000000000000351e-06,1.1420000000000000351e-06,8.1899999999999995026,8.2300000000000004263,7.3600000000000003197,5,4,2,8.1899999999999995026,8.2300000000000004263,7.3600000000000003197,6,4,2);
CREATE TABLE rank_phase_stats (
  run_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  phase TEXT NOT NULL CHECK (phase IN ('data', 'forward', 'backward', 'comm', 'optimizer', 'eval', 'checkpoint')),
  mean_s REAL,
  median_s REAL,
  p95_s REAL,
  min_s REAL,
  max_s REAL,
  PRIMARY KEY (run_id, rank, phase),
  FOREIGN KEY (run_id, rank) REFERENCES rank_results(run_id, rank) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO rank_phase_stats VALUES(1,0,'backward',0.00026374966666666666654,0.0002603279999999999917,0.00027021540000000005563,0.0002596070000000000235,0.00027131400000000003864);
INSERT INTO rank_phase_stats VALUES(1,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(1,0,'comm',1.6333333333333334006e-07,1.5000000000000001968e-07,1.8599999999999999793e-07,1.5000000000000001968e-07,1.9000000000000000726e-07);
INSERT INTO rank_phase_stats VALUES(1,0,'data',3.1413333333333337219e-06,3.0250000000000002602e-06,3.5290000000000004321e-06,2.814000000000000078e-06,3.5850000000000004042e-06);
INSERT INTO rank_phase_stats VALUES(1,0,'eval',0.000598334666666666703,0.0008948330000000000433,0.00089963720000000007431,0.0,0.00090017100000000006571);
INSERT INTO rank_phase_stats VALUES(1,0,'forward',0.0002392229999999999964,0.00022699800000000001096,0.00026219520000000002017,0.00022456500000000000224,0.00026610600000000000312);
INSERT INTO rank_phase_stats VALUES(1,0,'optimizer',9.0457666666666672978e-05,9.0485000000000012036e-05,9.0574100000000010894e-05,9.0304000000000008178e-05,9.0584000000000012269e-05);
INSERT INTO rank_phase_stats VALUES(2,0,'backward',0.00014919566666666666523,0.00013520200000000001097,0.00017306590000000000601,0.00013511200000000000336,0.00017727300000000000847);
INSERT INTO rank_phase_stats VALUES(2,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(2,0,'comm',0.0017580210000000000194,0.0017744110000000000437,0.0017799928000000000451,0.0017190390000000001138,0.0017806130000000001175);
INSERT INTO rank_phase_stats VALUES(2,0,'data',2.9210000000000000699e-06,2.0930000000000001203e-06,4.7254999999999999032e-06,1.6520000000000000226e-06,5.0180000000000000671e-06);
INSERT INTO rank_phase_stats VALUES(2,0,'eval',0.00035082899999999998461,0.00050647400000000003007,0.0005420591000000000428,0.0,0.00054601300000000003217);
INSERT INTO rank_phase_stats VALUES(2,0,'forward',0.00013825233333333335141,0.00012600800000000001734,0.00016595450000000001172,0.00011835600000000000319,0.00017039300000000002013);
INSERT INTO rank_phase_stats VALUES(2,0,'optimizer',9.1085666666666667643e-05,9.1055000000000001492e-05,9.1397900000000014764e-05,9.0766000000000004767e-05,9.1436000000000010219e-05);
INSERT INTO rank_phase_stats VALUES(2,1,'backward',0.00014876099999999999414,0.00013635300000000000046,0.00017255009999999999987,0.00013335800000000000626,0.00017657200000000000282);
INSERT INTO rank_phase_stats VALUES(2,1,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(2,1,'comm',0.0017722030000000001895,0.0017720190000000001114,0.0018157707000000002095,0.0017239580000000000441,0.0018206320000000001963);
INSERT INTO rank_phase_stats VALUES(2,1,'data',2.83400000000000031e-06,1.803000000000000144e-06,4.7496000000000002314e-06,1.622000000000000098e-06,5.0770000000000006881e-06);
INSERT INTO rank_phase_stats VALUES(2,1,'eval',0.00035060533333333335605,0.00050623400000000004592,0.00054164720000000009508,0.0,0.00054558200000000007644);
INSERT INTO rank_phase_stats VALUES(2,1,'forward',0.00013426333333333334606,0.0001243050000000000101,0.00015542879999999999153,0.00011959800000000000248,0.0001588869999999999985);
INSERT INTO rank_phase_stats VALUES(2,1,'optimizer',9.1252333333333333839e-05,9.1025000000000003477e-05,9.1971800000000005995e-05,9.0655000000000005326e-05,9.207700000000000628e-05);
INSERT INTO rank_phase_stats VALUES(4,0,'backward',0.00028228550000000001991,0.00028228550000000001991,0.00028240745000000002642,0.00028215000000000000062,0.00028242100000000003919);
INSERT INTO rank_phase_stats VALUES(4,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(4,0,'comm',6.3099999999999997245e-07,6.3099999999999997245e-07,6.7600000000000007097e-07,5.810000000000000277e-07,6.8100000000000002319e-07);
INSERT INTO rank_phase_stats VALUES(4,0,'data',4.4815000000000002064e-06,4.4815000000000002064e-06,5.4053500000000006871e-06,3.4550000000000003781e-06,5.5080000000000004581e-06);
INSERT INTO rank_phase_stats VALUES(4,0,'eval',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(4,0,'forward',0.00086342600000000003721,0.00086342600000000003721,0.00087123170000000011055,0.00085475300000000008823,0.0008720990000000000946);
INSERT INTO rank_phase_stats VALUES(4,0,'optimizer',4.5277500000000001447e-05,4.5277500000000001447e-05,8.6027249999999998684e-05,0.0,9.0555000000000002895e-05);
CREATE TABLE steps (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  loss REAL,
  lr REAL,
  grad_norm REAL,
  tokens INTEGER NOT NULL,
  step_time_s REAL,
  data_s REAL,
  forward_s REAL,
  backward_s REAL,
  comm_s REAL,
  optimizer_s REAL,
  eval_s REAL,
  checkpoint_s REAL,
  comm_calls INTEGER NOT NULL,
  comm_bytes INTEGER NOT NULL,
  comm_exposed_s REAL,
  mem_active INTEGER NOT NULL,
  mem_peak INTEGER NOT NULL,
  PRIMARY KEY (run_id, rank, step)
) WITHOUT ROWID;
INSERT INTO steps VALUES(1,0,0,5.5409743520785408321,0.00029999999999999997371,1.4900298110695953113,124,0.0024395329999999998057,0.0016931720000000001664,0.00035083300000000004759,0.00030105800000000004388,1.0819999999999999743e-06,9.1677000000000010114e-05,0.0,0.0,1,149120,5.9100000000000003784e-07,4540452,4540452);
INSERT INTO steps VALUES(1,0,1,5.5099257163144397253,0.00029999999999999997371,1.3712180607143664712,124,0.0014815559999999999753,3.5850000000000004042e-06,0.00022699800000000001096,0.0002596070000000000235,1.5000000000000001968e-07,9.0485000000000012036e-05,0.00090017100000000006571,0.0,1,149120,8.9999999999999998568e-08,4548452,4548452);
INSERT INTO steps VALUES(1,0,2,5.4888101812522700484,0.00029999999999999997371,1.4077083243961217018,124,0.00063200099999999998206,3.0250000000000002602e-06,0.00026610600000000000312,0.00027131400000000003864,1.9000000000000000726e-07,9.0584000000000012269e-05,0.0,0.0,1,149120,8.9999999999999998568e-08,4548452,4548452);
INSERT INTO steps VALUES(1,0,3,5.4716229732448740108,0.00029999999999999997371,1.4862818025822188694,124,0.0014733039999999999331,2.814000000000000078e-06,0.00022456500000000000224,0.0002603279999999999917,1.5000000000000001968e-07,9.0304000000000008178e-05,0.0008948330000000000433,0.0,1,149120,9.9999999999999995472e-08,4548452,4548452);
INSERT INTO steps VALUES(2,0,0,5.5409743520785399439,0.00029999999999999997371,1.490029740481856546,62,0.8799613330000000122,5.6380000000000000601e-06,0.0056368740000000000511,0.00018604700000000000273,0.87401854300000003661,0.00010949300000000000351,0.0,0.0,143,149120,0.87401054099999997415,2743420,2743420);
INSERT INTO steps VALUES(2,0,1,5.5099257167561592751,0.00029999999999999997371,1.3712180152787825093,62,0.0027327300000000000548,5.0180000000000000671e-06,0.00017039300000000002013,0.00017727300000000000847,0.0017806130000000001175,9.1055000000000001492e-05,0.00050647400000000003007,0.0,143,149120,0.0017770060000000000282,2743420,2743420);
INSERT INTO steps VALUES(2,0,2,5.488810177066223872,0.00029999999999999997371,1.4077083085373982562,62,0.002122329999999999963,2.0930000000000001203e-06,0.00011835600000000000319,0.00013511200000000000336,0.0017744110000000000437,9.1436000000000010219e-05,0.0,0.0,143,149120,0.0017714770000000000342,2743420,2743420);
INSERT INTO steps VALUES(2,0,3,5.4716229798578153165,0.00029999999999999997371,1.4862818701086504269,62,0.0026189999999999998003,1.6520000000000000226e-06,0.00012600800000000001734,0.00013520200000000001097,0.0017190390000000001138,9.0766000000000004767e-05,0.00054601300000000003217,0.0,143,149120,0.0017170760000000001056,2743420,2743420);
INSERT INTO steps VALUES(2,1,0,5.5409743520785399439,0.00029999999999999997371,1.490029740481856546,62,0.87557472999999996776,4.8869999999999999664e-06,0.00025600100000000000416,0.00016154999999999999655,0.87504644400000008985,0.00010262300000000001,0.0,0.0,143,149120,0.87503724900000001696,2743420,2743420);
INSERT INTO steps VALUES(2,1,1,5.5099257167561592751,0.00029999999999999997371,1.3712180152787825093,62,0.0027608810000000001856,5.0770000000000006881e-06,0.0001588869999999999985,0.00017657200000000000282,0.0018206320000000001963,9.207700000000000628e-05,0.00050623400000000004592,0.0,143,149120,0.0018171759999999999909,2743420,2743420);
INSERT INTO steps VALUES(2,1,2,5.488810177066223872,0.00029999999999999997371,1.4077083085373982562,62,0.0021225110000000001024,1.803000000000000144e-06,0.00011959800000000000248,0.00013635300000000000046,0.0017720190000000001114,9.1025000000000003477e-05,0.0,0.0,143,149120,0.0017687150000000001308,2743420,2743420);
INSERT INTO steps VALUES(2,1,3,5.4716229798578153165,0.00029999999999999997371,1.4862818701086504269,62,0.0026200920000000000806,1.622000000000000098e-06,0.0001243050000000000101,0.00013335800000000000626,0.0017239580000000000441,9.0655000000000005326e-05,0.00054558200000000007644,0.0,143,149120,0.0017217739999999999173,2743420,2743420);
INSERT INTO steps VALUES(4,0,0,5.5409743520785408321,1.0000000000000000198e+30,1.4900298110695953113,124,0.0051298189999999998719,0.00014488600000000002193,0.0045449980000000006138,0.00034381200000000003468,1.5020000000000001882e-06,9.2177000000000008711e-05,0.0,0.0,1,149120,8.7100000000000000399e-07,4404444,4404444);
INSERT INTO steps VALUES(4,0,1,5.560681631015538251,1.0000000000000000198e+30,NULL,124,0.0012538070000000000117,5.5080000000000004581e-06,0.0008720990000000000946,0.00028215000000000000062,6.8100000000000002319e-07,9.0555000000000002895e-05,0.0,0.0,1,149120,2.7099999999999997821e-07,4404444,4404444);
CREATE TABLE val_losses (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  loss REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
INSERT INTO val_losses VALUES(1,2,5.5126562893973831691);
INSERT INTO val_losses VALUES(1,4,5.4819362722132920495);
INSERT INTO val_losses VALUES(2,2,5.5126562881857843478);
INSERT INTO val_losses VALUES(2,4,5.4819362710815013883);
CREATE TABLE poller_samples (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s REAL NOT NULL,
  pid INTEGER NOT NULL,
  ppid INTEGER NOT NULL,
  role TEXT NOT NULL,
  rank INTEGER,
  rss_bytes INTEGER NOT NULL,
  pss_bytes INTEGER,
  command TEXT NOT NULL
);
INSERT INTO poller_samples VALUES(1,1,2.9273000000000002468e-05,25178,25168,'other',NULL,0,4096,'[trainscope]');
INSERT INTO poller_samples VALUES(2,2,1.7274999999999999774e-05,25179,25168,'launcher',NULL,0,4096,'[mpirun]');
INSERT INTO poller_samples VALUES(3,2,0.25094133400000001588,25179,25168,'launcher',NULL,21348352,14466048,'[mpirun]');
INSERT INTO poller_samples VALUES(4,2,0.25094133400000001588,25183,25179,'rank',0,18886656,7451648,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(5,2,0.25094133400000001588,25184,25179,'rank',1,18837504,7461888,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(6,2,0.50020992300000000074,25179,25168,'launcher',NULL,21348352,14494720,'[mpirun]');
INSERT INTO poller_samples VALUES(7,2,0.50020992300000000074,25183,25179,'rank',0,23687168,11421696,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(8,2,0.50020992300000000074,25184,25179,'rank',1,23498752,11342848,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(9,2,0.75309790600000003912,25179,25168,'launcher',NULL,21348352,14494720,'[mpirun]');
INSERT INTO poller_samples VALUES(10,2,0.75309790600000003912,25183,25179,'rank',0,23687168,11421696,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(11,2,0.75309790600000003912,25184,25179,'rank',1,23498752,11342848,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(12,2,1.0018060450000001448,25179,25168,'launcher',NULL,21348352,14494720,'[mpirun]');
INSERT INTO poller_samples VALUES(13,2,1.0018060450000001448,25183,25179,'rank',0,23687168,11421696,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(14,2,1.0018060450000001448,25184,25179,'rank',1,23498752,11342848,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(15,2,1.2514903569999999977,25179,25168,'launcher',NULL,21348352,14494720,'[mpirun]');
INSERT INTO poller_samples VALUES(16,2,1.2514903569999999977,25183,25179,'rank',0,23687168,11421696,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(17,2,1.2514903569999999977,25184,25179,'rank',1,23498752,11342848,'/work/wt-check/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --bloc...');
INSERT INTO poller_samples VALUES(18,4,3.1837000000000000281e-05,25194,25191,'other',NULL,3837952,1351680,'/work/wt-check/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 12 --warm...');
INSERT INTO poller_samples VALUES(19,5,3.5503000000000002112e-05,25200,25195,'launcher',NULL,0,4096,'[mpirun]');
INSERT INTO poller_samples VALUES(20,5,0.24980399600000002813,25200,25195,'launcher',NULL,21159936,14605312,'[mpirun]');
INSERT INTO poller_samples VALUES(21,5,0.24980399600000002813,25228,25200,'rank',0,16678912,6123520,'/work/wt-check/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --json...');
INSERT INTO poller_samples VALUES(22,5,0.24980399600000002813,25230,25200,'rank',1,16588800,6252544,'/work/wt-check/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --json...');
INSERT INTO poller_samples VALUES(23,6,1.7797000000000002569e-05,25263,25195,'launcher',NULL,0,4096,'[mpirun]');
INSERT INTO poller_samples VALUES(24,6,0.25058039700000001026,25263,25195,'launcher',NULL,21270528,14473216,'[mpirun]');
INSERT INTO poller_samples VALUES(25,6,0.25058039700000001026,25267,25263,'rank',0,19582976,7825408,'/work/wt-check/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --json...');
INSERT INTO poller_samples VALUES(26,6,0.25058039700000001026,25268,25263,'rank',1,19447808,7791616,'/work/wt-check/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --json...');
CREATE TABLE allreduce_rows (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  transport TEXT NOT NULL,
  links TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL,
  count INTEGER NOT NULL,
  dtype TEXT NOT NULL,
  redop TEXT NOT NULL,
  time_us REAL,
  algbw_gbps REAL,
  busbw_gbps REAL,
  wrong INTEGER NOT NULL,
  call_time_us TEXT NOT NULL CHECK (json_valid(call_time_us))
);
INSERT INTO allreduce_rows VALUES(1,5,'shm','',2,8,2,'float32','sum',2859.1876666666667006,2.7979975198083651926e-06,2.7979975198083651926e-06,0,'[7951.341,3965.5660000000003,620.073]');
INSERT INTO allreduce_rows VALUES(2,5,'shm','',2,64,16,'float32','sum',8577.1426666666666276,7.4616923709014507069e-06,7.4616923709014507069e-06,0,'[25682.594999999998,11994.272,34.732]');
INSERT INTO allreduce_rows VALUES(3,5,'shm','',2,512,128,'float32','sum',1.3653333333333335097,0.37499999999999994448,0.37499999999999994448,0,'[1.522,1.362,1.292]');
INSERT INTO allreduce_rows VALUES(4,5,'shm','',2,4096,1024,'float32','sum',4.0359999999999995878,1.0148662041625371443,1.0148662041625371443,0,'[4.1659999999999995,4.076,3.876]');
INSERT INTO allreduce_rows VALUES(5,6,'tcp','1',2,8,2,'float32','sum',13.2629999999999999,0.00060318178391012599107,0.00060318178391012599107,0,'[17.305,13.821,10.446]');
INSERT INTO allreduce_rows VALUES(6,6,'tcp','1',2,64,16,'float32','sum',20.767666666666666941,0.0030817135611447281536,0.0030817135611447281536,0,'[26.119,28.732,26.93]');
INSERT INTO allreduce_rows VALUES(7,6,'tcp','1',2,512,128,'float32','sum',11.780999999999998805,0.04345980816569051941,0.04345980816569051941,0,'[13.45,10.815999999999999,13.18]');
INSERT INTO allreduce_rows VALUES(8,6,'tcp','1',2,4096,1024,'float32','sum',32.034333333333329107,0.12786281385596703907,0.12786281385596703907,0,'[26.429000000000002,45.217999999999996,25.197]');
CREATE INDEX runs_suite_id ON runs(suite_id);
CREATE INDEX runs_status ON runs(status);
CREATE INDEX poller_samples_run_id ON poller_samples(run_id, t_s);
CREATE INDEX allreduce_rows_run_id ON allreduce_rows(run_id, size_bytes);
COMMIT;
