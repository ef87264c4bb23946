//! What each legal action does to a [`Run`]: movement and arrival, combat rounds, items,
//! examining, puzzles, traps and rest. Legality and targets are settled before (in `rules`), so
//! these only apply effects, drawing randomness from the turn's [`Rng`].

use super::combat;
use super::entities::{Class, Effect, Item, PuzzleState, TrapState};
use super::event::GameEvent;
use super::map::DOWN;
use super::rng::Rng;
use super::rules::{ActionKind, REST_HEAL};
use super::run::Run;

impl Run {
    /// Carries out a legal action; its AP is already spent.
    pub(super) fn execute(
        &mut self,
        kind: ActionKind,
        target: Option<&str>,
        rng: &mut Rng,
        events: &mut Vec<GameEvent>,
    ) {
        // Enemies do not wait while you rummage: anything but fighting or fleeing in a guarded
        // room gives every living enemy a free blow first (the free `inventory` look excepted).
        let ambushed =
            matches!(kind, ActionKind::UseItem | ActionKind::Examine) && self.enemies_alive();
        if ambushed {
            let damage_taken = self.enemies_strike(rng);
            events.push(GameEvent::Ambushed { damage_taken });
            if self.player.hp == 0 {
                return;
            }
        }
        match kind {
            ActionKind::Move => {
                if let Ok(exit) = self.exit_index(target) {
                    self.go(exit, rng, events);
                }
            }
            ActionKind::Fight => {
                if let Ok(enemy) = self.enemy_index(target) {
                    self.fight(enemy, rng, events);
                }
            }
            ActionKind::Flee => self.flee(rng, events),
            ActionKind::UseItem => {
                if let Ok(item) = self.item_index(target) {
                    self.use_item(item, events);
                }
            }
            ActionKind::Examine => self.examine(events),
            ActionKind::Solve => self.solve(rng, events),
            ActionKind::Disarm => self.disarm(rng, events),
            ActionKind::Rest => {
                self.rested[self.room] = true;
                let healed = self.player.heal(REST_HEAL);
                events.push(GameEvent::Rested { healed });
            }
            ActionKind::Inventory => events.push(GameEvent::Inventory {
                items: self.player.inventory.iter().map(|i| i.id.clone()).collect(),
            }),
        }
    }

    fn go(&mut self, exit: usize, rng: &mut Rng, events: &mut Vec<GameEvent>) {
        let here = self.room;
        // A trap resets after springing: it strikes everyone who leaves until it is disarmed.
        if let Some(trap) = self.rooms[here]
            .trap
            .as_ref()
            .filter(|t| t.state == TrapState::Armed)
        {
            let damage = self.player.hurt(trap.damage);
            events.push(GameEvent::TrapSprung {
                trap: trap.name.clone(),
                damage,
            });
            if self.player.hp == 0 {
                return;
            }
        }
        let exit = self.rooms[here].exits[exit].clone();
        let descending = exit.direction == DOWN;
        self.came_from = if descending { None } else { Some(here) };
        if descending {
            let floor = self.rooms[exit.room].floor;
            self.tally.deepest_floor = self.tally.deepest_floor.max(floor);
            events.push(GameEvent::FloorReached { floor });
        }
        self.enter_room(exit.room, rng, events);
    }

    /// Arrival: mark the visit, let a ranger shoot first, pick up what nobody guards.
    pub(super) fn enter_room(&mut self, room: usize, rng: &mut Rng, events: &mut Vec<GameEvent>) {
        self.room = room;
        let first_visit = !self.visited[room];
        if first_visit {
            self.visited[room] = true;
            self.tally.rooms_visited += 1;
        }
        let r = &self.rooms[room];
        events.push(GameEvent::RoomEntered {
            room_id: r.id.clone(),
            name: r.name.clone(),
            floor: r.floor,
            first_visit,
        });
        // A ranger looses a sure (half-strength) shot at the first enemy before anything else...
        if self.player.class == Class::Ranger
            && let Ok(target) = self.enemy_index(None)
        {
            let enemy = &mut self.rooms[room].enemies[target];
            let damage = combat::first_strike(&self.player, enemy, rng);
            events.push(GameEvent::FirstStrike {
                enemy: enemy.name.clone(),
                damage,
                enemy_hp: enemy.hp,
            });
            if !enemy.alive() {
                self.defeat(target, events);
            }
        }
        // ...then the monsters that still stand strike whoever walked in.
        if self.enemies_alive() {
            let damage_taken = self.enemies_strike(rng);
            events.push(GameEvent::Ambushed { damage_taken });
        }
        self.collect(events);
    }

    /// Picks up the room's items once no enemy guards them.
    fn collect(&mut self, events: &mut Vec<GameEvent>) {
        if self.enemies_alive() {
            return;
        }
        let items: Vec<Item> = self.rooms[self.room].items.drain(..).collect();
        for item in items {
            self.take(item, events);
        }
    }

    fn take(&mut self, item: Item, events: &mut Vec<GameEvent>) {
        match &item.effect {
            Effect::Treasure { value } => {
                self.tally.treasure += value;
                events.push(GameEvent::TreasureFound {
                    name: item.name.clone(),
                    value: *value,
                });
            }
            effect => {
                events.push(GameEvent::ItemFound {
                    item: item.id.clone(),
                    name: item.name.clone(),
                    effect: item.describe(),
                });
                let better = matches!(effect, Effect::Equip { weapon } if weapon.atk > self.player.weapon.atk);
                self.player.inventory.push(item);
                if better {
                    let last = self.player.inventory.len() - 1;
                    self.use_item(last, events);
                }
            }
        }
    }

    fn defeat(&mut self, enemy: usize, events: &mut Vec<GameEvent>) {
        let foe = &self.rooms[self.room].enemies[enemy];
        let (name, xp, boss) = (foe.name.clone(), foe.xp(), foe.boss);
        self.tally.kills += 1;
        self.tally.kill_xp += i64::from(xp);
        self.boss_slain |= boss;
        events.push(GameEvent::EnemyDefeated {
            enemy: name,
            xp,
            boss,
        });
        self.gain_xp(xp, events);
    }

    fn gain_xp(&mut self, xp: i32, events: &mut Vec<GameEvent>) {
        for level in self.player.gain_xp(xp) {
            events.push(GameEvent::LevelUp { level });
        }
    }

    /// Every living enemy strikes; returns the HP lost.
    fn enemies_strike(&mut self, rng: &mut Rng) -> i32 {
        let mut taken = 0;
        for enemy in self.rooms[self.room].enemies.iter().filter(|e| e.alive()) {
            if self.player.hp == 0 {
                break;
            }
            taken += combat::enemy_strike(enemy, &mut self.player, rng);
        }
        taken
    }

    fn fight(&mut self, target: usize, rng: &mut Rng, events: &mut Vec<GameEvent>) {
        let enemy = &mut self.rooms[self.room].enemies[target];
        let strike = combat::player_strike(&self.player, enemy, rng);
        let (name, enemy_hp) = (enemy.name.clone(), enemy.hp);
        let mut later = Vec::new();
        if enemy_hp == 0 {
            self.defeat(target, &mut later);
        }
        let damage_taken = if self.boss_slain {
            0
        } else {
            self.enemies_strike(rng)
        };
        events.push(GameEvent::CombatRound {
            enemy: name,
            hit: strike.hit,
            crit: strike.crit,
            damage_dealt: strike.damage,
            enemy_hp,
            damage_taken,
        });
        events.append(&mut later);
        if self.player.hp > 0 {
            self.collect(events);
        }
    }

    fn flee(&mut self, rng: &mut Rng, events: &mut Vec<GameEvent>) {
        let chance = (50 + 5 * self.player.dex).min(95);
        match self.came_from {
            Some(back) if rng.percent(chance) => {
                let from = self.room;
                events.push(GameEvent::Fled {
                    room_id: self.rooms[back].id.clone(),
                });
                self.enter_room(back, rng, events);
                self.came_from = Some(from);
            }
            _ => {
                let damage_taken = self.enemies_strike(rng);
                events.push(GameEvent::FleeFailed { damage_taken });
            }
        }
    }

    fn use_item(&mut self, index: usize, events: &mut Vec<GameEvent>) {
        let item = self.player.inventory.remove(index);
        let effect = match &item.effect {
            Effect::Heal { amount } => format!("healed {} HP", self.player.heal(*amount)),
            Effect::RestoreAp { amount } => {
                let before = self.player.ap;
                self.player.ap = (self.player.ap + amount).min(self.player.max_ap);
                format!("restored {} AP", self.player.ap - before)
            }
            Effect::Bomb { damage } => {
                let mut hit = 0;
                for i in 0..self.rooms[self.room].enemies.len() {
                    let enemy = &mut self.rooms[self.room].enemies[i];
                    if enemy.alive() {
                        enemy.hp = (enemy.hp - damage).max(0);
                        hit += 1;
                        if !enemy.alive() {
                            self.defeat(i, events);
                        }
                    }
                }
                format!("{damage} damage to {hit} enemies")
            }
            Effect::Equip { weapon } => {
                let old = std::mem::replace(&mut self.player.weapon, weapon.clone());
                events.push(GameEvent::WeaponEquipped {
                    weapon: weapon.name.clone(),
                    atk: weapon.atk,
                });
                let id = old.name.to_ascii_lowercase().replace([' ', '\''], "-");
                self.player.inventory.push(Item::new(
                    &id,
                    &old.name.clone(),
                    Effect::Equip { weapon: old },
                ));
                format!("equipped {}", weapon.name)
            }
            Effect::Treasure { value } => {
                self.tally.treasure += value;
                format!("cashed {value} gold")
            }
        };
        events.push(GameEvent::ItemUsed {
            item: item.id,
            effect,
        });
        self.collect(events);
    }

    fn examine(&mut self, events: &mut Vec<GameEvent>) {
        self.examined[self.room] = true;
        let room = &mut self.rooms[self.room];
        let hidden: Vec<Item> = room.hidden.drain(..).collect();
        let found = hidden.iter().map(|i| i.name.clone()).collect();
        room.items.extend(hidden);
        let mut notes: Vec<String> = room
            .enemies
            .iter()
            .filter(|e| e.alive())
            .map(|e| match e.element.weakness() {
                Some(weak) => format!(
                    "{} ({}) is weak to {}",
                    e.name,
                    e.element.as_str(),
                    weak.as_str()
                ),
                None => format!("{} has no elemental weakness", e.name),
            })
            .collect();
        if let Some(trap) = room.trap.as_ref().filter(|t| t.state == TrapState::Armed) {
            notes.push(format!(
                "{} would deal {} damage to whoever leaves",
                trap.name, trap.damage
            ));
        }
        if room.stairs {
            notes.push("stairs lead down to the next floor".to_owned());
        }
        events.push(GameEvent::Examined {
            room_id: room.id.clone(),
            found,
            notes,
        });
        self.collect(events);
    }

    fn solve(&mut self, rng: &mut Rng, events: &mut Vec<GameEvent>) {
        let chance = (40 + 5 * self.player.int).min(95);
        let success = rng.percent(chance);
        let damage_on_failure = 3 + 2 * self.rooms[self.room].floor as i32;
        let Some(puzzle) = self.rooms[self.room].puzzle.as_mut() else {
            return;
        };
        let name = puzzle.name.clone();
        if success {
            puzzle.state = PuzzleState::Solved;
            let reward = puzzle.reward.clone();
            events.push(GameEvent::PuzzleSolved { puzzle: name });
            self.gain_xp(20, events);
            self.take(reward, events);
        } else {
            puzzle.attempts_left -= 1;
            if puzzle.attempts_left <= 0 {
                puzzle.state = PuzzleState::Sealed;
            }
            let attempts_left = puzzle.attempts_left;
            let damage = self.player.hurt(damage_on_failure);
            events.push(GameEvent::PuzzleFailed {
                puzzle: name,
                damage,
                attempts_left,
            });
        }
    }

    fn disarm(&mut self, rng: &mut Rng, events: &mut Vec<GameEvent>) {
        let chance = (55 + 5 * self.player.dex).min(95);
        let success = rng.percent(chance);
        let Some(trap) = self.rooms[self.room].trap.as_mut() else {
            return;
        };
        let name = trap.name.clone();
        if success {
            trap.state = TrapState::Disarmed;
            events.push(GameEvent::TrapDisarmed { trap: name });
            self.gain_xp(10, events);
        } else {
            let damage = self.player.hurt(trap.damage);
            events.push(GameEvent::TrapSprung { trap: name, damage });
        }
    }
}
