from __future__ import annotations

import libcst as cst

from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rules._loop_rules import BarrierLoopRule


class InferenceLoopWithoutBarrier(BarrierLoopRule):
    """
    ## What it does
    Flags a sampling or generation loop that reaches no graph barrier on each pass: a loop
    that steps a diffusion scheduler (`scheduler.step(noise_pred, t, latents)`, or a step
    helper handed it first with what it steps on, `self.step(self.scheduler,
    noise_pred=noise_pred, **inputs)` of a pipeline's base class; not an LR scheduler's,
    `self.step(self.scheduler, epoch)`), or that
    feeds a model (`model`, `unet`, `transformer`, `denoiser`, a recurrent `rnn`/`lstm`/
    `gru`, a network named in one word ending in `net`: `nnet`, `convnet`, ...) with state
    it carried over from the previous pass (`x = model(x, t)`; `ids = torch.cat([ids,
    next_id], 1)` before `model(ids)`; `outputs.append(y.argmax(-1))` before
    `decoder(outputs[-1])`, a list of tokens kept on the device), with no
    `torch_xla.sync()`/`xm.mark_step()` in the body, in a nested loop or in a function of
    the same module it calls. A model may be called through a method of a model class of
    this module that calls one of the class's own layers, whatever their names
    (`agent.get_value(obs[step])` with `self.critic = nn.Sequential(...)` and `return
    self.critic(x)`; attributes assigned anything but a `torch.nn` module or a model class
    of the module are not layers). A class whose base this file cannot see (`class
    NRTRDecoder(BaseDecoder)`, the base imported from another module) is a model class
    where its `__init__` makes torch.nn layers of its own (`self.classifier =
    nn.Linear(...)`; a loss, a wrapped model or a container, which any object may keep,
    does not count), so a greedy decoding loop calling `self._attention(seq, enc)` runs the
    model. So may a method the class keeps in an attribute (`self.decode_one_token =
    decode`, the local bound to `self.decode_sampled` in one branch and to
    `self.decode_greedy` in the other, every binding one of its methods): a token loop
    calling it, itself or through a helper (`token = self.next_token(token)`), runs the
    model those methods call. A network handed in runs whatever its name, where the code
    says it is one: a parameter annotated as a module or as a callable that returns a
    tensor (`obj_fun: Callable[[torch.Tensor], torch.Tensor]`, a planner's objective
    that rolls the model out, where the pass picks its state by the callable's scores,
    `values.topk(n)`; not a callback annotated to return `None`, nor a conjugate gradient
    solve whose callable is an operator, `matrix_vector_dot_fn(p)`), an attribute
    `__init__` binds from such a parameter (`estimator: torch.nn.Module = None`, then
    `self.estimator = estimator`, also in a base of the module that the subclass hands
    its arguments on to), a part of an object called through its `forward`
    (`self.estimator.forward(x, t=t)`: PyTorch's protocol for running a module), and a
    function the loop's function defines that runs a model, handed with the state to a
    step helper (`xt = step_fn(velocity_func, xt, t0, dt)`, an ODE solver's Euler or
    midpoint step); an unannotated attribute called plainly (`self.transform(x)`) says
    nothing. Applying a model runs it: latent diffusion's samplers call the denoiser as
    `self.model.apply_model(x, t, c)` (`apply_` and a model's name, not `apply_weight_norm`
    or `apply_lora_to_model`). A Markov chain's kernel counts as a model where it
    draws the state it replaces (`params = kernel.sample(params)`; `buffer.sample(n)` and
    `dist.sample()` draw from something else). An element of a module list that the loop's
    own index picks (`x = self.ar_net[i](x)` in `for i in range(len(self.ar_layers) + 1)`),
    or that its item keys (`generators[domain](outputs[f"real_{domain}"])` in `for domain
    in self._reachable_domains`), is a different model on each pass: such a loop walks the
    model's structure in one forward, not repeated steps of one model (`self.nets[-1](x)`
    on every pass still is one). So is the layer a loop over a network's layers hands to
    a helper that runs it, as `block(x)` runs it (`text, image =
    gradient_checkpoint_forward(block, image=image, text=text)` in `for block in
    dit.transformer_blocks`, also over a slice of a layer list, `reversed(self.up_blocks)`
    or `model.children()`); a helper handed the model itself (`run(unet, latents, t)` in
    a loop over timesteps) still runs one model a pass. A barrier behind `if XLA_AVAILABLE:` counts.
    Loops inside `forward`, a `*_step` function (also in a function nested in one and
    called there) or a hook a framework calls from its step
    (a Trainer's `compute_loss`; trl's `PPOTrainer.batched_forward_pass`, whose loop over
    the rollout's mini-batches keeps their results only to join them) are one step's graph
    and are not reported
    (a recurrent unroll over the input, `out, h = self.lstm(x, h)`), unless the loop decodes:
    the state it hands the model holds tokens or samples chosen from the model's scores
    (`outputs.append(Y.argmax(2))` before `self.decoder(outputs[-1], state)`; `y =
    torch.multinomial(probs, 1)`, `res = torch.cat([res, y], -1)` before `self.base_net(
    ...res...)`): a generation loop in a `forward` or `predict_step` is still one graph
    growing token after token. So is a loop that adds fresh device noise to the state it
    hands the model, outside the model, on each pass (`x = mean + sigma *
    torch.randn_like(mean)`, `mean` computed from `x`, before `x = self.denoiser(x,
    sigma)`; `sample += sigma * noise` after `self.diff_model(...)`): a diffusion or
    Langevin sampler written as a module's `forward`. So is a loop, with autograd off
    (`@torch.no_grad()`, `@torch.inference_mode()`, or under `with torch.no_grad():`),
    that calls a network its class was handed at construction (`self.net = net` in
    `__init__`) on the state the pass hands to the next, itself or in a resample sweep
    nested in it (`v_pred = self.net(x_noisy, sigmas[i])`, then `x_noisy = alphas[i + 1]
    * x_pred + betas[i + 1] * noise_pred`): a deterministic sampler wrapping the model it
    samples, whose forward trains nothing; a recurrent unroll over the module's own cell,
    or a refinement loop that keeps gradients, stays one step. So is a loop whose step sits
    in a helper of the module: each pass rebinds its state to what the helper hands back
    (`x = self.step(x, fn=fn, sigma=sigmas[i], ...)`), and the helper runs the network it
    is handed on the state and adds fresh noise to what it returns (`d = (x - fn(x,
    sigma=sigma)) / sigma`, ..., `return x + torch.randn_like(x) * sigma_up`): a stochastic
    sampler, in a `forward` too; a deterministic step (an ODE solver's `y =
    self.rk4_step(func, y, t, dt)`) stays one step's graph. Noise added to a pass's own input
    (`self.rnn(x[t] + noise, h)`) or drawn for a latent no pass carries (`z = mu + std *
    torch.randn_like(std)`) is part of one step. A loop over as many passes as output
    positions (`for _ in range(max_new_tokens)`, `range(maxlen)`, `range(start,
    max_length)`; not `max_steps`) that runs the model on each pass, in its body or in a
    loop nested in it (one call per micro-batch state: `for state in states: logits =
    model(torch.cat(state.ids, -1))`),
    and feeds it what the previous pass handed over, still on the device (the states the
    nested loop walks: `states = new_states`), decodes too, whatever objects carry the
    tokens (`GenerationState(ids=state.ids + [new_ids])`), and whatever else the pass reads
    on the host (an early stop, `if bool((token == eos).all()): break`: a read executes
    only the graph of what it reads); positions whose model runs on nothing carried
    (`logits[:, i] = head(x[:, i])`) are one computation. Nor is a
    loop that holds a training loop (an RL update: a rollout loop, then epochs of optimizer
    steps): its nested loops are the step loops, and the rollout loop is reported itself.

    A nest of loops is reported once, at the loop whose pass is one sampling step. Where
    the model runs in a nested sweep over a repetition count that continues the state the
    outer loop hands from step to step (`for sigma in sigmas: for r in
    range(resample_times): images = denoise(unet(images, sigma))`, as inpainting samplers
    resample; corrector sweeps), the outer loop is reported and the sweep is part of its
    step: a barrier after the sweep gives every step the same graph of a few model calls.
    So is a sweep over a window the pass slices from a buffer it writes the sweep's
    results back into (`in_buffer = in_arr[s : s + 1024][None]`, the sweep, then
    `in_arr[s:e, k] = in_buffer[0, r:, k]`): the next, overlapping window reads them, so
    the buffer is state handed from step to step; a window of an input no pass writes
    into, or of a buffer the pass builds anew, carries nothing. A value copied to the host
    in the pass (`.cpu()`, `float(t)`) starts no device state,
    but a cast of a constant reads nothing: `logits[:, -1] = float("-inf")`, masking a
    token before sampling it, keeps the state on the device (audiolm's coarse and fine
    sampling loops, a quantizer sweep per time step).
    A loop that starts each pass from new state (`for prompt in prompts: x =
    torch.randn(...)` before the sampling loop) runs whole sampling loops, and the inner
    loop is reported. A nested loop over data (a loader) is a step loop of its own.

    Also flags an evaluation loop over a data loader (a `DataLoader`, or a value named like
    one: `val_dataloader`, `loader`, `dl`, `dataset`, also through a progress bar the
    function binds first: `tk0 = tqdm(data_loader)`, then `for i, x in enumerate(tk0):`,
    or data of any name whose items the pass moves to a device, `for theta, x in pairs:
    theta, x = theta.to(device), x.to(device)`, in a loop of its own, not nested in
    another nor in a function training code calls) that runs the model on each batch (a
    model by its name, a callable the function is handed applied to the moved data,
    `posterior(x)`, `log_p(theta, x)`, or a method of an object it is handed applied to
    that data, `adversary.predict(data)`, `adversary.perturb(data, label)` (not one that
    stores or logs it: `meter.update(x)`, `results.append(x)`), a part or method of one handed
    the batch, `self.model.teacher(x)`, `self.model.get_maps(img)`, a helper this file
    does not define handed a model and the batch, `self._transform(model=self.model,
    inputs=batch)`, `predict_fn(net, x)`, or a function or own
    method named for the forward pass, whatever it
    calls the model by: `self.forward(*data)`, `_forward(estimators, *data)`,
    `self._staged_forward(i, *data)`, as ensembles write it, or a module that the same
    function puts in eval or train mode before calling it: `self.trunk.eval()` ...
    `self.embedder(self.trunk(x))`), itself or in a loop nested in the pass over the
    items of its batch (`for img, label in zip(batch.image, batch.gt_label):`), and
    keeps the results on the device for the next pass: a running total (`correct +=
    (model(x).argmax(-1) == y).sum()`), a list of outputs (`outs.append(model(x))`) that
    the function joins after the loop (`torch.cat(outs)`, also in a function of the module
    it hands the list to: `self._get_quantiles_of_maps(maps)`, or of another module of the
    project, one re-export away, that names no XLA: `gather_listed_dicts(results)` running
    `torch.cat([d[k] for d in dict_list])`), or buffers the first pass allocates (`if i ==
    0: all_q = torch.zeros(n, d, device=device)`, `i` the loop's own index, or `if not
    arrays_defined:` whose block sets `arrays_defined = True`) and every pass
    writes (`all_q[s:e] = q`): what a block runs on the first pass only is carried by the
    later ones, not rebound by each. Every batch's forward then waits in one graph,
    compiled and run when the total is read. So does a calibration pass over a loader that
    drops the model's output (`with calibration_mode(model): for x, _ in loader:
    model(x.to(device))`, a model handed to a helper with the batch, `model_forward(model,
    inps)`): the forward runs for the state it leaves in the model, the statistics its
    observers or forward hooks collect, norm layers' running means, a hook's saved
    activations, carried from batch to batch on the device.

    A host read in the pass is no barrier: it executes the graph of the value it reads,
    and every other pending value stays lazy. A total kept on the device past each batch's
    `loss.item()` (or past its own `total.item()`, `float(total)`: they read the value
    but leave the total's graph pending) still holds every batch (measured,
    benchmarks/XLA_SEMANTICS.md "barrier": 6 compiles over loops of 6, 7, 8 and 9 steps,
    against 3 with `torch_xla.sync()` per step). What the pass brings back to the host
    carries nothing: a total of host numbers (`correct += n.item()`, or a helper of this
    module that returns Python numbers, `acc1, acc5 = accuracy(logits, y)`), outputs
    copied with `.cpu()`, the positions of a helper's result that hold, on its every
    `return`, a host copy or a value it was handed unchanged (`preds, targets =
    self.evaluate_step(model, batch)` returning `preds.cpu(), _targets`, with `_targets`
    the batch's targets from before it moved them), results written into a numpy array
    that every binding of the function makes (`y_pred = np.zeros_like(y).astype(float)`,
    then `y_pred[te_idx] = pred` per pass: numpy copies the values to the host), and
    state copied whole with `x.cpu()`
    or `x.tolist()`, which leaves it as device data (8 steps compile 1 graph, as with a
    barrier; `x.item()` compiles 9). A model result rebound to an attribute every pass
    (`self.state.outputs = model(batch)`) is rebound, not carried.

    Not reported: evaluation loops whose results reach the host in the pass, or that carry
    nothing; chunks of one batch or rollout (`for
    mb in batch.split(n)`) and loops over an ensemble's networks, parts of one step; walks
    over a network's own parts (`model.named_modules()`, `net.parameters()`,
    `model.state_dict().items()`) that move each part to a device (`m.to(model_device)`
    after packing a quantized layer): layers, not batches from the host; loops over a
    sampler's schedule that move each timestep to a device and sum a loss over it (`for
    t in pipe.scheduler.timesteps: t = t.to(device)`, a distillation loss over a teacher
    trajectory: a timestep is no batch, the total is one training step's graph); sizes
    (`n += x.size(0)`), Python ints. Other evaluation loops are left to XLA403 (iterate them
    with `MpDeviceLoader`). A loop that walks an input in strides (`for i in range(0,
    len(x), bs):`, not nested in another loop, or over such a range bound to a name first)
    and slices it at the loop's value (`model(x[i : i + bs])`, a sliding window
    `input_ids[:, begin:end]`, the indices `torch.arange(start, end)`), or over a count
    of batches slicing it at multiples of its index (`for k in range(n_batches):
    x[k * bs : (k + 1) * bs]`, also through offsets the pass binds first, `start = k *
    bs`; not a window the index picks by itself, `x[:, i : i + w]`) is such an
    evaluation loop too, a loader written by hand; not where the model takes a cache the
    previous pass handed over (`conv_cache=`, `past_key_values=`: one input decoded in
    pieces), nor in a function that training code of the module calls (its chunks are
    micro-batches of a training step). Measured on the XLA CPU device (a two-layer MLP,
    batches of 32, losses stacked or correct counts summed after the loop): without a
    barrier one graph is compiled at the read, in 0.6 s for 8 batches and 1.1 s for 32
    (summed; 1.3 s and 2.2 s stacked), and again for every new number of batches; with
    `torch_xla.sync()` per batch the one-batch graph is compiled once and reused.

    Loops an XLA host never runs are left alone: under a CUDA guard, a test for another
    accelerator or another framework (a library written for several backends: `if
    backend_name == "jax":`), or a failed XLA test, and in a function or private method
    this file calls only from such branches. Reported in files that use torch: that import
    it, or bind it by a call that imports it by name (`torch = try_import("torch")`, an
    optional dependency).

    ## Why is this bad?
    Each pass builds on the tensors of the previous one, so without a barrier XLA keeps
    extending one graph across all the sampling steps: nothing runs until the final image or
    tokens are read, and then a graph holding every step is compiled, for each number of
    steps used. With a barrier each pass is the same graph, compiled once and reused.

    ## Example
    ```python
    for t in scheduler.timesteps:
        noise_pred = unet(latents, t, encoder_hidden_states=embeds).sample
        latents = scheduler.step(noise_pred, t, latents).prev_sample
    ```

    ## Use instead
    ```python
    import torch_xla

    for t in scheduler.timesteps:
        noise_pred = unet(latents, t, encoder_hidden_states=embeds).sample
        latents = scheduler.step(noise_pred, t, latents).prev_sample
        torch_xla.sync()
    ```

    ## Fix safety
    Safe. The fix appends `torch_xla.sync()` as the last statement of the loop body, at the
    body's indentation (`xm.mark_step()` if the file already calls it), and adds `import
    torch_xla` if needed; a barrier only decides where graphs are cut (but see device random
    numbers, below). Where torch_xla is an optional import guarded by a flag (`XLA_AVAILABLE =
    True`, as in diffusers), the barrier goes behind `if XLA_AVAILABLE:`; an optional import
    without such a flag gets no fix. No fix for a one-line body, a loop with `else:`, or a body
    whose last statement is `return`, `break`, `continue` or `raise`.

    Where the loop iterates a plain `DataLoader` (traced as for XLA403) and moves each batch
    to a device itself (`x.to(device)`, `x.cuda()`), the fix instead wraps the loader in the
    loop header, `for x, y in pl.MpDeviceLoader(loader, torch_xla.device()):`, as a person
    porting the loop would: every batch is then a barrier, and batches arrive on the XLA
    device where the loop moved them anyway (the move becomes a no-op). In a file whose
    model a device ladder without XLA places (XLA305), the wrap is unsafe and goes together
    with the ladder's fix (both or neither): wrapped alone, batches would reach the XLA
    device while the model stays on the CPU.

    Random numbers drawn on the device in the loop (dropout, `torch.randn(...,
    device=...)`) are the exception: a barrier changes which numbers torch_xla's device
    generator gives every later draw, so the results are a different sample of the same
    distribution, not the same values (measured by the `device_randomness` runtime case:
    values differ, a two-sample Kolmogorov-Smirnov test finds the same distribution).
    Without device randomness, results are the same values up to float rounding (a graph cut
    in two may round differently; bit-identical or not depends on the host CPU).

    ## Runtime evidence
    8 denoising steps on the XLA CPU device (case `sampling_loop`): without a barrier one graph
    of {sampling_loop.before.max_graph_size} nodes holds every step; with `torch_xla.sync()`
    each step the largest graph is {sampling_loop.after.max_graph_size} nodes; the results are
    {sampling_loop.outputs}. A sampler that adds `torch.randn_like` noise each step (case
    `device_randomness`) gives results that are {device_randomness.outputs}.
    """

    code = "XLA402"
    name = "inference-loop-without-barrier"
    message = (
        "Sampling/generation loop without a graph barrier: every step extends one XLA graph; "
        "call `torch_xla.sync()` once per step"
    )
    evaluation_message = (
        "Evaluation loop keeps every batch's model results on the device without a graph "
        "barrier: one XLA graph spans all batches; call `torch_xla.sync()` once per batch"
    )
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("torch",)

    def leave_Module(self, node: cst.Module) -> None:
        if not self.torch_code():
            return
        for loop in self.xla_step_loops():
            if not loop.trains and not (loop.has_barrier or loop.syncing_loader):
                start, end = self.header(loop.site)
                message = self.evaluation_message if loop.evaluates else None
                self.report(start, message, end_node=end, fix=self.barrier_fix(loop.site))
