-- The profile of each uploaded strategy component, measured by its dry tick at upload: which
-- limits it runs under (`bare`: host.log only; `runtime`: a language runtime over WASI), the
-- linear memory it asked for and the fuel its first tick burnt. NULL for components uploaded
-- before profiles existed (they are measured again on their next upload).
ALTER TABLE strategy_components ADD COLUMN profile TEXT;
ALTER TABLE strategy_components ADD COLUMN profile_memory_bytes BIGINT;
ALTER TABLE strategy_components ADD COLUMN profile_fuel BIGINT;
