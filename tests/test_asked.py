"""Which profile slots a question asks for (``memory.recall.asked``)."""

from __future__ import annotations

import pytest

from memory.recall import asked, context, everyday


@pytest.mark.parametrize(
    ("question", "slots"),
    [
        ("@Mnemo where does @bob live?", {"location"}),
        ("do you remember where I live?", {"location"}),
        ("@Mnemo dove abita @giulia?", {"location"}),
        ("@Mnemo where is @nina from originally?", {"hometown"}),
        ("@Mnemo dove è cresciuta @giulia?", {"hometown"}),
        ("@Mnemo da dove viene @hanna?", {"hometown"}),
        ("@Mnemo what does @sofi do for a living?", {"job"}),
        ("@Mnemo what's @ines_qz's job?", {"job"}),
        ("@Mnemo @rikk0 che lavoro fa?", {"job"}),
        ("@Mnemo ti ricordi che lavoro faccio?", {"job"}),
        ("@Mnemo does @nina have any pets?", {"pet"}),
        ("@Mnemo does @giulia have animals at home?", {"pet"}),
        ("@Mnemo @rikk0 ha animali domestici?", {"pet"}),
        ("Mnemo do you remember my pet's name?", {"pet"}),
        ("Mnemo ti ricordi come si chiama il mio animale?", {"pet"}),
        ("@Mnemo what is @hanna studying at uni?", {"study"}),
        ("@Mnemo what's my name?", {"name"}),
        # the everyday slots (memory.recall.everyday)
        ("@Mnemo does @tom play any instruments?", {"instrument"}),
        ("@Mnemo @ines_qz suona qualche strumento?", {"instrument"}),
        ("What instruments does Melanie play?", {"instrument"}),
        ("@Mnemo @giulia pratica qualche sport?", {"sport"}),
        ("@Mnemo does @rikk0 play any sports?", {"sport"}),
        ("@Mnemo does @rikk0 do any sport?", {"sport"}),
        ("@Mnemo what sport does @dave follow?", {"team"}),
        ("@Mnemo which team does @tom support?", {"team"}),
        ("@Mnemo does @rikk0 follow football?", {"team"}),
        ("@Mnemo per che squadra tifa @luca?", {"team"}),
        ("@Mnemo @sofi è tifosa?", {"team"}),
        ("@Mnemo can @nina drive?", {"drive"}),
        ("@Mnemo @sofi ha la patente?", {"drive"}),
        ("@Mnemo does @nina drive?", {"drive"}),
        ("@Mnemo does @bob have a car?", {"drive"}),
        ("@Mnemo does @dave still smoke?", {"smoke"}),
        ("@Mnemo @luca fuma ancora?", {"smoke"}),
        ("@Mnemo does @nina eat meat?", {"diet"}),
        ("@Mnemo @sofi mangia carne?", {"diet"}),
        ("@Mnemo @giulia può mangiare il glutine?", {"diet"}),
        ("@Mnemo is @hanna vegan?", {"diet"}),
        ("@Mnemo who is @nina dating?", {"partner"}),
        ("@Mnemo @tom è sposato?", {"partner"}),
        ("@Mnemo con chi è sposata @ines?", {"partner"}),
        ("@Mnemo has @rikk0 got a girlfriend?", {"partner"}),
        ("@Mnemo has @dave got kids?", {"children"}),
        ("@Mnemo @ines ha figli?", {"children"}),
        ("@Mnemo does @hanna have any siblings?", {"siblings"}),
        ("@Mnemo @sofi ha fratelli?", {"siblings"}),
        ("@Mnemo has @nina got family abroad?", {"children", "siblings", "parents"}),
    ],
)
def test_a_question_for_a_slot(question: str, slots: set[str]) -> None:
    assert asked.slots(context.normalize(question)) == slots


@pytest.mark.parametrize(
    "question",
    [
        "@Mnemo how does @tom get to his job?",  # the commute, not the job
        "@Mnemo what is @dave's biggest pet peeve?",
        "@Mnemo does @dave have any pet projects?",
        "When did Nate take time off to chill with his pets?",
        "Where did Caroline move from 4 years ago?",
        "What did John do to help his community last year in his hometown?",
        "How old are Deborah's cats?",
        "@Mnemo what does @luca's girlfriend do?",
        "@Mnemo do you remember my hobby?",
        # to the bot about itself: lore, no viewer's slot
        "@Mnemo where do you live?",
        "@Mnemo da dove vieni?",
        "@Mnemo how old are you?",
        "@Mnemo che lavoro fai?",
        # the everyday slots' words, not asked for
        "@Mnemo which team won last night?",
        "@Mnemo do you follow the streamer on twitter?",
        "@Mnemo what game is @tom playing?",
        "@Mnemo the smoke in that cutscene, did you see it?",
        "When did Calvin have a car incident?",
        "@Mnemo is this a single player game?",
        "@Mnemo can a usb drive run ubuntu?",
        "@Mnemo did that smoke grenade kill him?",
        "@Mnemo do you like sports?",
        "@Mnemo what's the dating sim called?",
        "How many children does Melanie have?",  # a count of what she said, not a yes or no
        "@Mnemo what martial art does @rikk0 practice?",  # one sport, not all of them
        "@Mnemo what does @luca's girlfriend eat?",
    ],
)
def test_a_question_that_only_mentions_a_slot_word_asks_for_none(question: str) -> None:
    assert asked.slots(context.normalize(question)) == frozenset()


@pytest.mark.parametrize(
    ("question", "slots"),
    [
        # a relative's job, home or habit is not the viewer's
        ("@Mnemo che lavoro fa il marito di @ines?", set()),
        ("@Mnemo what does @dave's wife do for a living?", set()),
        ("@Mnemo where is @sofi's boyfriend from?", set()),
        ("@Mnemo where does @tom's sister live?", set()),
        ("@Mnemo is @nina's brother married?", set()),
        ("@Mnemo does his dad still smoke?", set()),
        ("@Mnemo dove abita la sorella di @giulia?", set()),
        # the relation itself is the viewer's slot
        ("@Mnemo who are @nina's parents?", {"parents"}),
        # the viewer's own, with a relative beside them
        ("@Mnemo where does @tom live with his girlfriend?", {"location"}),
        ("@Mnemo dove vive @luca con sua moglie?", {"location"}),
    ],
)
def test_a_question_about_a_relative_asks_for_no_slot_of_the_viewer_s(
    question: str, slots: set[str]
) -> None:
    assert asked.slots(context.normalize(question)) == slots


@pytest.mark.parametrize(
    ("statement", "slots"),
    [
        ("I have a hamster called Rex", {"pet"}),  # a profile value
        ("my dog Biscuit chewed through my slippers again", {"pet"}),
        ("ho due gatti, Pepe e Oliva", {"pet"}),
        ("I've got a bearded dragon called Kevin", {"pet"}),
        ("abito a Lione", {"location"}),
        ("greetings from Toronto, where I live", {"location"}),
        ("I grew up in Cornwall near the sea", {"hometown"}),
        ("I'm a baker, I start kneading at 3am", {"job"}),
        ("my biggest pet peeve is people who clap", set()),
        ("il mio animale guida è il bradipo", set()),
        ("my friend has a dog", set()),
        ("I ate my hot dog", set()),
        ("ho il terrore dei serpenti", set()),  # afraid of snakes: no pet
        ("ho paura dei cani grandi", set()),
        ("ho un acquario con dodici pesci tropicali", {"pet"}),
        ("back from a night shift, being a nurse is brutal", {"job"}),
        ("sono un'illustratrice freelance, faccio copertine", {"job"}),
        ("I quit my job", set()),  # clears the slot: no answer
        ("I have a horse called Pretzel at a stable", {"pet"}),
        # the everyday slots (memory.recall.everyday)
        ("il pianoforte è la mia passione da quando avevo sei anni", {"instrument"}),
        ("I'm the bassist in a pub covers band", {"instrument"}),
        ("strimpello l'ukulele la sera", {"instrument"}),
        ("I've started learning how to play the piano", {"instrument"}),
        ("abito al quarto piano senza ascensore", set()),  # a floor, not a piano
        ("my new keyboard has brown switches", set()),
        ("I can play Guitar Hero blindfolded", set()),
        ("il sabato gioco a pallavolo con le amiche", {"sport"}),
        ("I do Brazilian jiu jitsu twice a week", {"sport"}),
        ("I beat the third gym leader", set()),
        ("I support Celtic, been to Parkhead twice", {"team"}),
        ("tifo Juventus da sempre", {"team"}),
        ("domenica vado allo stadio a vedere il Napoli", {"team"}),
        ("I follow the Premier League religiously", {"team"}),
        ("I follow like 40 cooking accounts on Instagram", set()),
        ("I support you streamer, keep going", set()),
        ("I support the idea of a subathon", set()),
        ("I support the Yankees, sadly", {"team"}),
        ("tifo per te streamer, ce la fai", set()),
        ("the manual helps with surfing the web", set()),
        ("my son Leo turns five on Saturday", {"children"}),
        ("ho due bambine, di 4 e 7 anni", {"children"}),
        ("I have three older sisters", {"siblings"}),
        ("io e Matteo siamo gemelli", {"siblings"}),
        ("in Elden Ring il fratello di Malenia è assurdo", set()),  # somebody else's brother
        ("I watched all of Twin Peaks", set()),
        ("my mum runs a bakery in Partick", {"parents"}),
        ("I flashed the bios on my mother board", set()),
        ("non guido, vado ovunque in bici", {"drive"}),
        ("I drive a beat up Fiat Panda", {"drive"}),
        ("I quit cigarettes in March, 8 months clean", {"smoke"}),
        ("the kitchen filled with smoke when I tried your recipe", set()),
        ("I'm vegetarian for 6 years now", {"diet"}),
        ("sono celiaca quindi niente pizza normale", {"diet"}),
        ("my partner is a firefighter", {"partner"}),
        ("mio marito è un pilota di linea", {"partner"}),
        ("me and my duo partner won", set()),
        ("I'm doing a part-time psychology degree at Trinity", {"study"}),
        ("the animal crossing soundtrack is my study music", set()),
        # a sentence that asks says nothing of its speaker
        ("That's awesome! What type of guitar? Been playing long?", set()),
        ("do you smoke? I quit cigarettes last year", {"smoke"}),
    ],
)
def test_what_a_statement_states(statement: str, slots: set[str]) -> None:
    assert asked.states(statement) == slots


def test_a_slot_without_a_profile_value_is_searched_with_its_words() -> None:
    # what a question for it is searched with beside its own words (memory.recall.sources)
    assert all(asked.search_words(frozenset({slot})) for slot, _ in everyday.ASKS)

    def words(question: str) -> str:
        return asked.search_words(asked.slots(context.normalize(question)))

    assert "patente" in words("ha la patente?")
    assert "gatto" in words("does she have any animals?")
    # the profile keeps where a viewer lives: no words to search for it
    assert asked.search_words(frozenset({"location", "job"})) == ""
